//===- ShippedProfilesTest.cpp - The real-model profiles in tests/data ------===//
//
// Checks the shipped profiles against facts computable by hand: parameter
// counts of the torchvision models, one gradient per parameter, optimizer
// state sizes, identical iterations.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/Signature.h"
#include "deepum/format/Summary.h"
#include "deepum/tools/Inspect.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <map>

using namespace deepum;
using namespace deepum::test;

namespace {

class ShippedProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedProfile, SummaryMatchesHandComputableFacts) {
  const std::string &Model = GetParam();
  v1::Profile P = takeOk(format::readProfile(shippedProfilePath(Model)));
  ASSERT_GT(P.kernels_size(), 0);
  format::ProfileSummary S = format::summarize(P);
  // llama-1b-ckpt is llama-1b traced with activation checkpointing on.
  const bool Checkpointed = llvm::StringRef(Model).endswith("-ckpt");
  const std::string Arch = Checkpointed ? Model.substr(0, Model.size() - 5) : Model;
  EXPECT_EQ(S.Model, Arch);

  // Parameter counts: torchvision's models (torchvision.models.*()), and the two
  // transformers computed from their layers; all fp32.
  // The two transformers from their architecture (python/deepum_trace/models.py):
  // hidden h = 1024, FFN f = 4096, 24 layers; every Linear has a bias.
  constexpr uint64_t H = 1024, F = 4096;
  constexpr uint64_t Linear = H * H + H, LayerNorm = 2 * H, Fc1 = H * F + F, Fc2 = F * H + H;
  // BERT-large: word (30522), position (512) and token-type (2) embeddings and
  // a LayerNorm; per layer q, k, v, out projections, two LayerNorms and the
  // MLP; the MLM head (dense + LayerNorm) and a decoder bias, its weight tied.
  constexpr uint64_t Bert = (30522 + 512 + 2) * H + LayerNorm +
                            24 * (4 * Linear + 2 * LayerNorm + Fc1 + Fc2) + Linear + LayerNorm +
                            30522;
  // GPT-2 medium: token (50257) and position (1024) embeddings; per block two
  // LayerNorms, a fused qkv projection, the out projection and the MLP; a
  // final LayerNorm; the LM head tied to the token embeddings.
  constexpr uint64_t Gpt2 = (50257 + 1024) * H +
                            24 * (2 * LayerNorm + (3 * H * H + 3 * H) + Linear + Fc1 + Fc2) +
                            LayerNorm;
  // BART-large: shared token embeddings (50265) and learned positions (1026)
  // for encoder and decoder; 12 encoder layers (self-attention, two
  // LayerNorms, MLP) and 12 decoder layers (self- and cross-attention, three
  // LayerNorms, MLP); the LM head tied.
  constexpr uint64_t Bart = (50265 + 2 * 1026) * H +
                            12 * (4 * Linear + 2 * LayerNorm + Fc1 + Fc2) +
                            12 * (8 * Linear + 3 * LayerNorm + Fc1 + Fc2);
  // Llama 1B: d = 2048, 32 query heads and 8 key/value heads of 64, SwiGLU
  // 8192, RMSNorm (a weight, no bias), no biases anywhere, 16 layers, token
  // embeddings (32000) tied to the head, a final RMSNorm.
  constexpr uint64_t D = 2048, Kv = 8 * 64, Ffn = 8192;
  constexpr uint64_t Llama =
      32000 * D + 16 * (D * D + 2 * D * Kv + D * D + 3 * D * Ffn + 2 * D) + D;
  static_assert(Bert == 335174458 && Gpt2 == 354823168 && Bart == 406287360 &&
                    Llama == 1038682112,
                "hand-computed parameter counts");
  static const std::map<std::string, uint64_t> KnownParams = {{"resnet50", 25557032},
                                                              {"vgg16", 138357544},
                                                              {"vit_b_16", 86567656},
                                                              {"bert-large", Bert},
                                                              {"gpt2-medium", Gpt2},
                                                              {"bart-large", Bart},
                                                              {"llama-1b", Llama}};
  uint64_t Params = P.workload().parameter_count();
  ASSERT_EQ(KnownParams.count(Arch), 1u) << Model;
  EXPECT_EQ(Params, KnownParams.at(Arch));
  EXPECT_GT(Params, 0u);
  EXPECT_EQ(S.PeakLiveBytesByRole["parameter"], Params * 4) << "fp32 parameters";
  EXPECT_EQ(S.PeakLiveBytesByRole["gradient"], Params * 4) << "one fp32 gradient per parameter";
  // SGD with momentum keeps one buffer per parameter; AdamW keeps two.
  bool Transformer = Arch != "resnet50" && Arch != "vgg16" && Arch != "vit_b_16";
  EXPECT_EQ(S.PeakLiveBytesByRole["optimizer_state"], Params * 4 * (Transformer ? 2 : 1));

  // Every iteration launches the same kernel sequence.
  ASSERT_GE(P.iterations_size(), 2);
  EXPECT_EQ(S.Kernels, S.KernelsPerIteration * S.Iterations);
  for (int It = 1; It < P.iterations_size(); ++It)
    for (uint32_t K = 0; K < P.iterations(0).kernel_count(); ++K)
      ASSERT_EQ(format::executionId(P.kernels(P.iterations(0).first_kernel() + K)),
                format::executionId(P.kernels(P.iterations(It).first_kernel() + K)))
          << Model << " iteration " << It << " kernel " << K;

  // Persistent state is parameters + gradients + optimizer state (+ inputs).
  EXPECT_GE(S.PersistentBytes,
            S.PeakLiveBytesByRole["parameter"] + S.PeakLiveBytesByRole["optimizer_state"]);
  // Per role, what is live at once: each iteration's activations are not summed.
  for (const auto &[Role, Bytes] : S.PeakLiveBytesByRole)
    EXPECT_LE(Bytes, S.PeakLiveBytes) << Role;
  EXPECT_GT(S.PeakLiveBytesByRole["activation"], 0u);
  EXPECT_GE(S.PeakLiveBytes, S.PersistentBytes);
  // A 2 MiB block holds at most 2 MiB of live data, so the touched blocks cover the peak.
  EXPECT_GE(S.FootprintBytes, S.PeakLiveBytes / 2);
}

TEST_P(ShippedProfile, InspectJsonWorks) {
  tools::InspectOptions O;
  O.Input = shippedProfilePath(GetParam());
  O.Json = true;
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  ASSERT_FALSE(bool(tools::runInspect(O, OS)));
  llvm::json::Value V = takeOk(llvm::json::parse(OS.str()));
  const llvm::json::Object *Obj = V.getAsObject();
  ASSERT_NE(Obj, nullptr);
  for (const char *Key : {"kind", "model", "kernels_per_iteration", "footprint_bytes",
                          "peak_live_bytes", "peak_live_bytes_by_role", "migrations", "faults"})
    EXPECT_NE(Obj->get(Key), nullptr) << Key;
  llvm::StringRef Name = GetParam();
  Name.consume_back("-ckpt");
  EXPECT_EQ(Obj->getString("model"), llvm::Optional<llvm::StringRef>(Name));
}

INSTANTIATE_TEST_SUITE_P(Models, ShippedProfile, ::testing::ValuesIn(shippedModels()), testNameOf);

} // namespace
