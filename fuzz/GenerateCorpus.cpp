//===- GenerateCorpus.cpp - The fuzz targets' seed corpora -------------------===//
//
//   fuzz_corpus_generator OUT_DIR      (fuzz/generate-corpus.sh runs it)
//
// Writes OUT_DIR/<target>/<seed> for every fuzz target: small training-like
// profiles from the test suite's builder (tests/planner/Synthetic.h), plans
// the planner makes from them, both in every encoding a target reads, and
// hand-made hostile inputs: truncated messages, wrong wire types, lengths and
// sizes far beyond the input, wrong versions, semantic nonsense. The output
// is deterministic, so regenerating changes nothing unless the builders or
// the planner changed.
//
//===----------------------------------------------------------------------===//
#include "Synthetic.h"

#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"

#include "google/protobuf/unknown_field_set.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace deepum;

namespace {

std::string OutDir;
unsigned Written = 0;

void write(const std::string &Target, const std::string &Name, const std::string &Bytes) {
  llvm::SmallString<256> Dir(OutDir);
  llvm::sys::path::append(Dir, Target);
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir)) {
    llvm::errs() << "fuzz_corpus_generator: " << Dir << ": " << EC.message() << "\n";
    std::exit(1);
  }
  llvm::SmallString<256> Path(Dir);
  llvm::sys::path::append(Path, Name);
  std::error_code EC;
  llvm::raw_fd_ostream Out(Path, EC);
  if (EC) {
    llvm::errs() << "fuzz_corpus_generator: " << Path << ": " << EC.message() << "\n";
    std::exit(1);
  }
  Out << Bytes;
  ++Written;
}

std::string binary(const google::protobuf::Message &M) {
  std::string S;
  M.SerializeToString(&S);
  return S;
}

/// A text-format seed: the first byte '#' selects the text parser (FuzzSupport.h).
std::string text(const google::protobuf::Message &M) {
  return "# deepum fuzz seed: protobuf text format\n" + format::toText(M);
}

void appendVarint(std::string &Out, uint64_t V) {
  while (V >= 0x80) {
    Out.push_back(static_cast<char>(V | 0x80));
    V >>= 7;
  }
  Out.push_back(static_cast<char>(V));
}

std::string tag(unsigned Field, unsigned WireType) {
  std::string S;
  appendVarint(S, (uint64_t{Field} << 3) | WireType);
  return S;
}

/// A length-delimited field whose length says `Claimed` but holds `Payload`.
std::string lengthField(unsigned Field, uint64_t Claimed, const std::string &Payload) {
  std::string S = tag(Field, 2);
  appendVarint(S, Claimed);
  return S + Payload;
}

test::SyntheticOptions small() {
  test::SyntheticOptions O;
  O.Layers = 2;
  O.Iterations = 2;
  O.ParamBytes = 3ull << 20;
  O.ActivationBytes = 5ull << 20;
  return O;
}

struct NamedProfile {
  std::string Name;
  v1::Profile P;
};

std::vector<NamedProfile> profiles() {
  std::vector<NamedProfile> Ps;
  Ps.push_back({"synthetic", test::syntheticTraining(small())});
  test::SyntheticOptions O = small();
  O.TwoStreams = true;
  O.ExtraKernel = true;
  O.Iterations = 3;
  Ps.push_back({"two-streams-extra-kernel", test::syntheticTraining(O)});
  O = small();
  O.BlocksOnly = true;
  O.Marks = false;
  O.Iterations = 3;
  Ps.push_back({"blocks-only-no-marks", test::syntheticTraining(O)});
  O = small();
  O.RepeatedNames = true;
  O.FrozenParameters = true;
  O.Layers = 3;
  Ps.push_back({"repeated-names-frozen", test::syntheticTraining(O)});
  O = small();
  O.MissingFaults = true;
  O.CutShort = true;
  O.Iterations = 3;
  Ps.push_back({"missing-faults-cut-short", test::syntheticTraining(O)});
  // Launch arguments (deepum-profile's named allocations): each kernel names
  // the allocations of its tensor accesses, half of those accesses dropped
  // (what faults miss), an unrelated allocation named too; every third kernel
  // reached one allocation without a name, every fifth had no layout.
  NamedProfile Args{"arguments", test::syntheticTraining(small())};
  for (int K = 0; K < Args.P.kernels_size(); ++K) {
    v1::Kernel &Kn = *Args.P.mutable_kernels(K);
    if (K % 5 == 4) {
      Kn.set_arguments(v1::KERNEL_ARGUMENTS_NO_LAYOUT);
      continue;
    }
    Kn.set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
    std::set<uint64_t> Named;
    for (const v1::TensorAccess &T : Kn.tensors())
      Named.insert(T.allocation_id());
    uint64_t Indirect = 0;
    if (K % 3 == 0 && !Named.empty()) {
      Indirect = *Named.begin();
      Named.erase(Named.begin());
    }
    Named.insert(Args.P.allocations(K % Args.P.allocations_size()).id());
    if (Indirect)
      Named.erase(Indirect);
    for (uint64_t Id : Named)
      Kn.add_named_allocations(Id);
    if (Indirect)
      Kn.add_indirect_allocations(Indirect);
    google::protobuf::RepeatedPtrField<v1::TensorAccess> Kept;
    for (int T = 0; T < Kn.tensors_size(); ++T)
      if (T % 2 == 0)
        *Kept.Add() = Kn.tensors(T);
    Kn.mutable_tensors()->Swap(&Kept);
  }
  Ps.push_back(std::move(Args));
  return Ps;
}

/// Profiles the reader must refuse (or survive): each a small edit of a valid one.
std::vector<NamedProfile> hostileProfiles(const v1::Profile &Base) {
  std::vector<NamedProfile> Ps;
  auto Edit = [&](const char *Name, auto F) {
    v1::Profile P = Base;
    F(P);
    Ps.push_back({Name, std::move(P)});
  };
  Edit("wrong-version", [](v1::Profile &P) { P.set_format_version(7); });
  Edit("huge-allocation", [](v1::Profile &P) {
    P.mutable_allocations(0)->set_size_bytes(~uint64_t{0} - 4096);
  });
  Edit("address-wraps", [](v1::Profile &P) {
    P.mutable_allocations(0)->set_address(~uint64_t{0} - (1u << 20));
  });
  Edit("um-block-one-byte", [](v1::Profile &P) { P.set_um_block_bytes(1); });
  Edit("kernel-ends-before-start", [](v1::Profile &P) {
    P.mutable_kernels(1)->set_end_ns(P.kernels(1).start_ns() - 1);
  });
  Edit("free-before-alloc", [](v1::Profile &P) {
    v1::Allocation *A = P.mutable_allocations(P.allocations_size() - 1);
    A->set_freed(true);
    A->set_free_time_ns(A->alloc_time_ns() ? A->alloc_time_ns() - 1 : 0);
  });
  Edit("iteration-past-end", [](v1::Profile &P) {
    v1::Iteration *It = P.add_iterations();
    It->set_first_kernel(static_cast<uint32_t>(P.kernels_size()) - 1);
    It->set_kernel_count(~uint32_t{0});
  });
  Edit("tensor-past-allocation", [](v1::Profile &P) {
    v1::TensorAccess *T = P.mutable_kernels(0)->add_tensors();
    T->set_allocation_id(1);
    T->set_offset(~uint64_t{0} - 8);
    T->set_bytes(64);
  });
  Edit("block-outside-allocations", [](v1::Profile &P) {
    v1::BlockAccess *B = P.mutable_kernels(0)->add_blocks();
    B->set_block(~uint64_t{0} >> 21);
    B->set_page_mask(~uint32_t{0});
  });
  Edit("duplicate-allocation-id", [](v1::Profile &P) {
    *P.add_allocations() = P.allocations(0);
  });
  Edit("named-without-arguments", [](v1::Profile &P) {
    P.mutable_kernels(0)->add_named_allocations(P.allocations(0).id());
  });
  Edit("named-unknown-allocation", [](v1::Profile &P) {
    P.mutable_kernels(0)->set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
    P.mutable_kernels(0)->add_named_allocations(1u << 30);
  });
  Edit("named-descending", [](v1::Profile &P) {
    P.mutable_kernels(0)->set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
    P.mutable_kernels(0)->add_named_allocations(P.allocations(1).id());
    P.mutable_kernels(0)->add_named_allocations(P.allocations(0).id());
  });
  Edit("named-and-indirect", [](v1::Profile &P) {
    P.mutable_kernels(0)->set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
    P.mutable_kernels(0)->add_named_allocations(P.allocations(0).id());
    P.mutable_kernels(0)->add_indirect_allocations(P.allocations(0).id());
  });
  Edit("nan-roofline", [](v1::Profile &P) {
    P.mutable_kernels(0)->set_flops(std::numeric_limits<double>::quiet_NaN());
    P.mutable_kernels(1)->set_dram_bytes(std::numeric_limits<double>::infinity());
    P.mutable_device()->set_link_bytes_per_second(-1);
  });
  return Ps;
}

/// Byte-level damage to a valid binary message (either kind).
void writeDamaged(const std::string &Target, const std::string &Kind, const std::string &Bytes) {
  write(Target, "truncated-half." + Kind + ".pb", Bytes.substr(0, Bytes.size() / 2));
  write(Target, "truncated-last-byte." + Kind + ".pb", Bytes.substr(0, Bytes.size() - 1));
  // Field 1 (format_version, a varint) sent as a 32-bit fixed value.
  write(Target, "wrong-wire-type." + Kind + ".pb", tag(1, 5) + std::string("\x01\0\0\0", 4) + Bytes);
  // A repeated message field claiming 4 GiB, then the real message.
  write(Target, "huge-length." + Kind + ".pb", Bytes + lengthField(8, uint64_t{1} << 32, "\x08\x01"));
  // A length past the end of the input by one byte.
  write(Target, "length-past-end." + Kind + ".pb", Bytes + lengthField(7, 3, "\x08\x01"));
  // A varint of eleven bytes (at most ten are valid).
  write(Target, "overlong-varint." + Kind + ".pb",
        tag(1, 0) + std::string(10, '\xff') + std::string("\x01", 1) + Bytes);
  // An unknown field of every wire type, including a group never closed.
  write(Target, "unknown-fields." + Kind + ".pb",
        Bytes + tag(99, 0) + "\x05" + tag(98, 1) + std::string(8, '\x07') + tag(97, 5) +
            std::string(4, '\x07') + lengthField(96, 2, "ab") + tag(95, 3));
  // Deeply nested unknown groups.
  std::string Nested;
  for (int I = 0; I < 200; ++I)
    Nested += tag(90, 3);
  write(Target, "nested-groups." + Kind + ".pb", Bytes + Nested);
  write(Target, "empty." + Kind + ".pb", "");
}

/// The planner and simulator targets: one parameter byte, then a binary profile.
void writeParameterised(const std::string &Target, const std::string &Name,
                        const v1::Profile &P, std::initializer_list<uint8_t> Params) {
  std::string Bytes = binary(P);
  for (uint8_t Param : Params) {
    char Hex[8];
    std::snprintf(Hex, sizeof Hex, "%02x", Param);
    write(Target, Name + "-" + Hex + ".pb", std::string(1, static_cast<char>(Param)) + Bytes);
  }
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 2) {
    llvm::errs() << "usage: fuzz_corpus_generator OUT_DIR\n";
    return 2;
  }
  OutDir = Argv[1];

  std::vector<NamedProfile> Ps = profiles();
  for (const NamedProfile &NP : Ps)
    write("fuzz_profile_read", NP.Name + ".profile.pb", binary(NP.P));
  // Text encodings are verbose: one layer, two iterations.
  test::SyntheticOptions TinyOpts = small();
  TinyOpts.Layers = 1;
  TinyOpts.ParamBytes = 1ull << 20;
  TinyOpts.ActivationBytes = 1ull << 20;
  v1::Profile Tiny = test::syntheticTraining(TinyOpts);
  write("fuzz_profile_read", "tiny.profile.json", format::toJson(Tiny));
  write("fuzz_profile_read", "tiny.profile.txtpb", text(Tiny));
  TinyOpts.BlocksOnly = true;
  write("fuzz_profile_read", "tiny-blocks-only.profile.txtpb",
        text(test::syntheticTraining(TinyOpts)));
  writeDamaged("fuzz_profile_read", "profile", binary(Ps[0].P));
  for (const NamedProfile &NP : hostileProfiles(Ps[0].P))
    write("fuzz_profile_read", NP.Name + ".profile.pb", binary(NP.P));

  // Plans: every profile, both strategies, at half its allocated bytes.
  std::vector<std::pair<std::string, v1::Plan>> Plans;
  for (const NamedProfile &NP : Ps)
    for (planner::Strategy S : {planner::Strategy::Prefetch, planner::Strategy::Swap}) {
      uint64_t Allocated = 0;
      for (const v1::Allocation &A : NP.P.allocations())
        Allocated += A.size_bytes();
      planner::PlanOptions O;
      O.GpuMemoryBytes = (Allocated / 2 + format::kUmBlockBytes - 1) / format::kUmBlockBytes *
                         format::kUmBlockBytes;
      O.DeviceModel = "v100-pcie-16gb";
      O.Strat = S;
      O.ProfileSource = NP.Name + ".profile.pb";
      llvm::Expected<planner::PlanResult> R = planner::compilePlan(NP.P, O);
      if (!R) {
        llvm::errs() << "fuzz_corpus_generator: planning " << NP.Name << ": "
                     << llvm::toString(R.takeError()) << "\n";
        return 1;
      }
      Plans.emplace_back(NP.Name + (S == planner::Strategy::Prefetch ? "-prefetch" : "-swap"),
                         std::move(R->Plan));
    }
  // The copy path: the first prefetch plan with a COPY_OUT of its first
  // arena block after the first launch, back by a COPY_IN before the last
  // (the synthetic profiles fit their capacity: deepum-plan copies nothing).
  for (size_t I = 0, N = Plans.size(); I < N; ++I) {
    if (Plans[I].first.find("-prefetch") == std::string::npos ||
        Plans[I].second.position_ids_size() < 3)
      continue;
    v1::Plan P = Plans[I].second;
    const uint64_t Block = P.metadata().um_block_bytes();
    std::vector<v1::Action> Acts(P.actions().begin(), P.actions().end());
    for (auto [Kind, At] : {std::pair{v1::ACTION_KIND_COPY_OUT, 1},
                            std::pair{v1::ACTION_KIND_COPY_IN, P.position_ids_size() - 1}}) {
      v1::Action A;
      A.set_kind(Kind);
      A.set_position(static_cast<uint32_t>(At));
      A.set_due_position(Kind == v1::ACTION_KIND_COPY_OUT ? 0 : static_cast<uint32_t>(At));
      A.set_dirty(Kind == v1::ACTION_KIND_COPY_OUT);
      v1::ArenaRange *R = A.add_ranges();
      R->set_offset(0);
      R->set_bytes(Block);
      Acts.push_back(A);
    }
    std::stable_sort(Acts.begin(), Acts.end(), [](const v1::Action &X, const v1::Action &Y) {
      return X.position() < Y.position();
    });
    P.clear_actions();
    for (v1::Action &A : Acts)
      *P.add_actions() = std::move(A);
    P.mutable_metadata()->set_copy_pool_bytes(Block);
    if (llvm::Error E = format::validatePlan(P)) {
      llvm::errs() << "fuzz_corpus_generator: the copy-path seed: " << llvm::toString(std::move(E))
                   << "\n";
      return 1;
    }
    Plans.emplace_back("copy-path", std::move(P));
    break;
  }
  for (const auto &[Name, Plan] : Plans) {
    write("fuzz_plan_read", Name + ".plan.pb", binary(Plan));
    write("fuzz_plan_reader_diff", Name + ".plan.pb", binary(Plan));
  }
  for (planner::Strategy S : {planner::Strategy::Prefetch, planner::Strategy::Swap}) {
    planner::PlanOptions O;
    O.GpuMemoryBytes = 2 * format::kUmBlockBytes;
    O.DeviceModel = "v100-pcie-16gb";
    O.Strat = S;
    llvm::Expected<planner::PlanResult> R = planner::compilePlan(Tiny, O);
    if (!R) {
      llvm::errs() << "fuzz_corpus_generator: planning tiny: " << llvm::toString(R.takeError())
                   << "\n";
      return 1;
    }
    if (S == planner::Strategy::Prefetch)
      write("fuzz_plan_read", "tiny-prefetch.plan.json", format::toJson(R->Plan));
    else
      write("fuzz_plan_read", "tiny-swap.plan.txtpb", text(R->Plan));
  }
  // Hand-made damage starts from the plan with the most actions.
  const v1::Plan *Richest = &Plans[0].second;
  for (const auto &NP : Plans)
    if (NP.second.actions_size() > Richest->actions_size())
      Richest = &NP.second;
  for (const char *Target : {"fuzz_plan_read", "fuzz_plan_reader_diff"}) {
    writeDamaged(Target, "plan", binary(*Richest));
    v1::Plan P = *Richest;
    P.set_format_version(9);
    write(Target, "wrong-version.plan.pb", binary(P));
    P = *Richest;
    P.mutable_metadata()->set_um_block_bytes(0);
    write(Target, "zero-block-bytes.plan.pb", binary(P));
    P = *Richest;
    P.mutable_layout()->mutable_placements(0)->set_offset(~uint64_t{0} - 4096);
    write(Target, "placement-past-arena.plan.pb", binary(P));
    P = *Richest;
    for (v1::Action &A : *P.mutable_actions())
      A.set_position(A.position() + 1000000);
    write(Target, "action-past-positions.plan.pb", binary(P));
    P = *Richest;
    P.mutable_execution_ids(0)->add_positions(~uint32_t{0});
    write(Target, "id-position-past-end.plan.pb", binary(P));
    P = *Richest;
    P.mutable_block_chains(0)->add_blocks(~uint64_t{0});
    write(Target, "chain-block-past-arena.plan.pb", binary(P));
    P = *Richest;
    v1::ArenaRange *R = P.add_actions()->add_ranges();
    R->set_offset(~uint64_t{0} - 10);
    R->set_bytes(100);
    write(Target, "range-wraps.plan.pb", binary(P));
    P = *Richest;
    P.add_position_ids(P.position_ids(0));
    write(Target, "extra-position.plan.pb", binary(P));
    // The copy path's rules, broken one at a time: a slot past the pool, a
    // copy of part of a block, a pool offset on another kind, a pool of part
    // of a block.
    for (const auto &[Name, Plan] : Plans) {
      if (Name != "copy-path")
        continue;
      auto FirstOf = [](v1::Plan &Q, v1::ActionKind K) -> v1::Action * {
        for (v1::Action &A : *Q.mutable_actions())
          if (A.kind() == K)
            return &A;
        return nullptr;
      };
      P = Plan;
      if (v1::Action *A = FirstOf(P, v1::ACTION_KIND_COPY_OUT))
        A->set_pool_offset(P.metadata().copy_pool_bytes());
      write(Target, "copy-slot-past-pool.plan.pb", binary(P));
      P = Plan;
      if (v1::Action *A = FirstOf(P, v1::ACTION_KIND_COPY_IN))
        A->mutable_ranges(0)->set_bytes(A->ranges(0).bytes() - 4096);
      write(Target, "copy-part-of-a-block.plan.pb", binary(P));
      P = Plan;
      if (v1::Action *A = FirstOf(P, v1::ACTION_KIND_COPY_IN))
        A->set_pool_offset(format::kUmBlockBytes);
      write(Target, "pool-offset-on-a-copy-in.plan.pb", binary(P));
      P = Plan;
      P.mutable_metadata()->set_copy_pool_bytes(P.metadata().copy_pool_bytes() + 4096);
      write(Target, "copy-pool-part-of-a-block.plan.pb", binary(P));
    }
    // A plan of the previous format: deepum-plan before lifetimes wrote no
    // live_begin, live_end, wrap_end or ticks (nor call indices), and its
    // per-iteration placements share bytes.
    P = *Richest;
    P.mutable_layout()->clear_ticks();
    P.mutable_layout()->clear_prologue_call_bytes();
    for (v1::Placement &Pl : *P.mutable_layout()->mutable_placements()) {
      Pl.clear_live_begin();
      Pl.clear_live_end();
      Pl.clear_wrap_end();
      Pl.clear_call_index();
    }
    write(Target, "previous-format.plan.pb", binary(P));
    // The launch sequence edited under its profile fingerprint: a rule of
    // both readers, so both refuse it.
    P = *Richest;
    P.set_position_ids(0, P.position_ids(P.position_ids_size() - 1));
    write(Target, "fingerprint-edited.plan.pb", binary(P));
    // Unknown fields inside every nested message, and known field numbers
    // with another wire type (unknown fields to protobuf, so to libdeepum):
    // both accept the plan and read the same fields.
    P = *Richest;
    auto Unknown = [](google::protobuf::Message &M) {
      return M.GetReflection()->MutableUnknownFields(&M);
    };
    auto Damage = [](google::protobuf::UnknownFieldSet *U, int Varint, int Len) {
      U->AddFixed32(Varint, 7);            // a varint field's number as fixed32
      U->AddFixed64(Varint, 7);            // ... as fixed64
      U->AddLengthDelimited(Varint, "xy"); // ... length-delimited
      U->AddVarint(Len, 7);                // a length-delimited field's number as varint
      google::protobuf::UnknownFieldSet *G = U->AddGroup(Len); // ... as a group
      G->AddVarint(1, 1);
      G->AddGroup(99)->AddFixed32(2, 3);
      U->AddGroup(77)->AddLengthDelimited(1, "group"); // an unknown number as a group
    };
    Damage(Unknown(P), 1, 2);
    Damage(Unknown(*P.mutable_metadata()), 1, 10);
    Damage(Unknown(*P.mutable_execution_ids(0)), 1, 3);
    if (P.execution_ids(0).successors_size() > 0)
      Damage(Unknown(*P.mutable_execution_ids(0)->mutable_successors(0)), 1, 3);
    Damage(Unknown(*P.mutable_block_chains(0)), 2, 5);
    if (P.actions_size() > 0) {
      Damage(Unknown(*P.mutable_actions(0)), 2, 4);
      Damage(Unknown(*P.mutable_actions(0)->mutable_ranges(0)), 1, 3);
    }
    Damage(Unknown(*P.mutable_layout()), 5, 2);
    Damage(Unknown(*P.mutable_layout()->mutable_placements(0)), 5, 9);
    write(Target, "unknown-fields-nested.plan.pb", binary(P));
    // Persistent placements by call (Placement.call_index): valid, a call
    // named twice, one on a per-iteration placement, one near 2^64.
    P = *Richest;
    uint64_t Call = 1;
    for (v1::Placement &Pl : *P.mutable_layout()->mutable_placements())
      if (Pl.persistent())
        Pl.set_call_index(Call += 3);
    write(Target, "call-indices.plan.pb", binary(P));
    v1::Plan Twice = P;
    for (v1::Placement &Pl : *Twice.mutable_layout()->mutable_placements())
      Pl.set_call_index(Pl.persistent() ? 7 : 0);
    write(Target, "call-index-twice.plan.pb", binary(Twice));
    v1::Plan OnTransient = P;
    for (v1::Placement &Pl : *OnTransient.mutable_layout()->mutable_placements())
      if (!Pl.persistent())
        Pl.set_call_index(5);
    write(Target, "call-index-on-transient.plan.pb", binary(OnTransient));
    v1::Plan Huge = P;
    for (v1::Placement &Pl : *Huge.mutable_layout()->mutable_placements())
      if (Pl.persistent())
        Pl.set_call_index(~uint64_t{0} - Pl.sequence());
    write(Target, "call-index-huge.plan.pb", binary(Huge));
    // The profiled calls' sizes (PoolLayout.prologue_call_bytes): agreeing
    // with the placements, and disagreeing with one.
    v1::Plan Sizes = P;
    uint64_t LastCall = 0;
    for (const v1::Placement &Pl : Sizes.layout().placements())
      LastCall = std::max(LastCall, Pl.call_index());
    for (uint64_t C = 1; C <= LastCall; ++C)
      Sizes.mutable_layout()->add_prologue_call_bytes(C % 3 == 0 ? 0 : 4096 * C);
    for (const v1::Placement &Pl : Sizes.layout().placements())
      if (Pl.call_index() != 0)
        Sizes.mutable_layout()->set_prologue_call_bytes(static_cast<int>(Pl.call_index() - 1),
                                                         Pl.size_bytes());
    write(Target, "prologue-call-bytes.plan.pb", binary(Sizes));
    if (Sizes.layout().prologue_call_bytes_size() > 0) {
      v1::Plan Disagrees = Sizes;
      const auto &First = Disagrees.layout().placements();
      for (const v1::Placement &Pl : First)
        if (Pl.call_index() != 0) {
          Disagrees.mutable_layout()->set_prologue_call_bytes(
              static_cast<int>(Pl.call_index() - 1), Pl.size_bytes() + 1);
          break;
        }
      write(Target, "prologue-call-bytes-disagree.plan.pb", binary(Disagrees));
    }
  }

  // Each profile twice per target; every policy and both cost models across them.
  static constexpr uint8_t PlannerParams[] = {0x03, 0x0d, 0x30, 0x1a, 0x27};
  static constexpr uint8_t SimParams[] = {0x00, 0x19, 0x52, 0xa3, 0x2c, 0x45};
  for (size_t I = 0; I < Ps.size(); ++I) {
    writeParameterised("fuzz_planner", Ps[I].Name, Ps[I].P,
                       {PlannerParams[(2 * I) % 5], PlannerParams[(2 * I + 1) % 5]});
    writeParameterised("fuzz_simulator", Ps[I].Name, Ps[I].P,
                       {SimParams[(2 * I) % 6], SimParams[(2 * I + 1) % 6]});
  }
  for (const NamedProfile &NP : hostileProfiles(Ps[0].P)) {
    writeParameterised("fuzz_planner", NP.Name, NP.P, {0x03});
    writeParameterised("fuzz_simulator", NP.Name, NP.P, {0x44});
  }
  std::string Bytes = binary(Ps[0].P);
  write("fuzz_planner", "truncated.pb", std::string("\x03", 1) + Bytes.substr(0, Bytes.size() / 2));
  write("fuzz_simulator", "truncated.pb", std::string("\x44", 1) + Bytes.substr(0, Bytes.size() / 2));
  write("fuzz_planner", "empty.pb", "");
  write("fuzz_simulator", "empty.pb", "");

  llvm::outs() << "fuzz_corpus_generator: " << Written << " files under " << OutDir << "\n";
  return 0;
}
