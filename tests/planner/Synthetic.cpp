//===- Synthetic.cpp - Training-like profiles for the planner's tests -------===//
#include "Synthetic.h"

#include "TestSupport.h"

#include <string>
#include <vector>

using namespace deepum::v1;

namespace deepum::test {

Profile syntheticTraining(const SyntheticOptions &O) {
  ProfileBuilder B;
  B.profile().mutable_workload()->set_model("synthetic");
  auto Free = [&](uint64_t Id) {
    Allocation *A = B.profile().mutable_allocations(static_cast<int>(Id - 1));
    A->set_freed(true);
    A->set_free_time_ns(B.now());
  };
  std::vector<uint64_t> W, G, M;
  for (int L = 0; L < O.Layers; ++L) {
    W.push_back(B.allocate(O.ParamBytes, 0, -1, ALLOCATION_ROLE_PARAMETER));
    G.push_back(B.allocate(O.ParamBytes, 0, -1, ALLOCATION_ROLE_GRADIENT));
    M.push_back(B.allocate(O.ParamBytes, 0, -1, ALLOCATION_ROLE_OPTIMIZER_STATE));
  }
  auto Name = [&](const char *Kind, int L) {
    return O.RepeatedNames ? std::string(Kind) : std::string(Kind) + "_" + std::to_string(L);
  };
  for (int It = 0; It < O.Iterations; ++It) {
    uint32_t First = static_cast<uint32_t>(B.profile().kernels_size());
    bool Last = It + 1 == O.Iterations;
    std::vector<uint64_t> Act(O.Layers + 1);
    Act[0] = B.allocate(O.ActivationBytes, B.now(), -1, ALLOCATION_ROLE_INPUT);
    B.kernel("load_input", O.KernelNs, {{Act[0], ACCESS_MODE_WRITE}});
    for (int L = 0; L < O.Layers; ++L) {
      Act[L + 1] = B.allocate(O.ActivationBytes, B.now());
      B.kernel(
          Name("fwd", L), O.KernelNs,
          {{Act[L], ACCESS_MODE_READ}, {W[L], ACCESS_MODE_READ}, {Act[L + 1], ACCESS_MODE_WRITE}});
      if (O.ExtraKernel && It == 1 && L == 2)
        B.kernel("noise_kernel", O.KernelNs / 4, {{Act[L + 1], ACCESS_MODE_READ}});
    }
    uint64_t Grad = B.allocate(O.ActivationBytes, B.now());
    B.kernel("loss", O.KernelNs, {{Act[O.Layers], ACCESS_MODE_READ}, {Grad, ACCESS_MODE_WRITE}});
    Free(Act[O.Layers]);
    for (int L = O.Layers - 1; L >= 0; --L) {
      uint64_t Prev = B.allocate(O.ActivationBytes, B.now());
      bool Frozen = O.FrozenParameters && L < O.Layers / 2;
      std::vector<ProfileBuilder::Use> Uses = {{Grad, ACCESS_MODE_READ},
                                               {Act[L], ACCESS_MODE_READ},
                                               {W[L], ACCESS_MODE_READ},
                                               {Prev, ACCESS_MODE_WRITE}};
      if (!Frozen)
        Uses.push_back({G[L], ACCESS_MODE_WRITE});
      int K = B.kernel(Name("bwd", L), O.KernelNs, Uses);
      if (O.TwoStreams)
        B.profile().mutable_kernels(K)->set_stream(7);
      Free(Grad);
      Free(Act[L]);
      Grad = Prev;
    }
    Free(Grad);
    int Optimizer = O.CutShort && Last ? O.Layers / 2 : O.Layers;
    for (int L = 0; L < Optimizer; ++L)
      if (!(O.FrozenParameters && L < O.Layers / 2))
        B.kernel(Name("adam", L), O.KernelNs / 2,
               {{G[L], ACCESS_MODE_READ},
                {W[L], ACCESS_MODE_READ_WRITE},
                {M[L], ACCESS_MODE_READ_WRITE}});
    uint32_t Count = static_cast<uint32_t>(B.profile().kernels_size()) - First;
    if (O.Marks)
      B.iteration(First, Count);
    if (O.MissingFaults && It == 0) {
      for (uint32_t K = First; K < First + Count; ++K) {
        Kernel *Kn = B.profile().mutable_kernels(static_cast<int>(K));
        Kn->clear_tensors();
        // Keep every other block: fault records went missing.
        auto *Blocks = Kn->mutable_blocks();
        for (int I = Blocks->size() - 1; I >= 0; I -= 2)
          Blocks->DeleteSubrange(I, 1);
      }
    }
  }
  Profile Out = B.build();
  const uint32_t LastFirst =
      Out.iterations_size() ? Out.iterations(Out.iterations_size() - 1).first_kernel() : 0;
  for (int K = 0; K < Out.kernels_size(); ++K) {
    Kernel *Kn = Out.mutable_kernels(K);
    if (O.BlocksOnly)
      Kn->clear_tensors();
    if (O.MissingFaultsInLast && static_cast<uint32_t>(K) >= LastFirst) {
      Kn->clear_tensors();
      auto *Blocks = Kn->mutable_blocks();
      for (int I = Blocks->size() - 1; I >= 0; I -= 2)
        Blocks->DeleteSubrange(I, 1);
    }
  }
  return Out;
}

} // namespace deepum::test
