//===- deepum/executor/PlanCursor.h - Where in the plan the program is -----===//
//
// Matches the live stream of execution IDs to the plan's position_ids.
//
// - Synced: the expected next position is known. A launch with the expected
//   ID advances by one. A launch whose ID is found a few positions ahead means
//   launches the plan expected were skipped (missing kernels): jump there. An
//   ID not found ahead is an inserted kernel: stay. After several unexplained
//   launches in a row the cursor is lost.
// - Searching (at start and when lost): candidate positions come from the
//   correlation table (the positions each ID occurs at); each further launch
//   keeps the candidates whose next position holds that ID. One candidate
//   left, or an ID that occurs once in the plan, re-synchronises. Plans with
//   context IDs (plan field 8) resync faster: the hash of the last
//   context_length live IDs names the position even inside repeated layers.
// - Off: after sustained mismatch (searching for too long), or when the first
//   launches are mostly unknown to the plan (a plan for a different model,
//   decided within kModelCheckLaunches launches), or when the plan's profile
//   fingerprint is not that of the program (below). The cursor says why,
//   once, through offReason(); the executor logs it and keeps allocating.
// - Profile fingerprint: a plan that carries one (the planner's FNV-1a hash
//   of the profiled iteration's execution IDs) is checked twice. The plan
//   rules (format::checkRawPlan) refuse a plan whose own position_ids do not
//   hash to it, so no file with one loads; a CompiledPlan built otherwise is
//   off at construction.
//   Then each iteration the program marks (deepum_step to deepum_step, with
//   launches in it) is hashed the same way: one equal to the fingerprint
//   confirms the plan for good; FingerprintIterations marked iterations in a
//   row without a match turn it off. Plans without a fingerprint (older
//   plans, fingerprint 0) and programs without marks are not checked.
//
// Not thread-safe: the executor holds the device's launch lock.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_PLANCURSOR_H
#define DEEPUM_EXECUTOR_PLANCURSOR_H

#include "deepum/executor/CompiledPlan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace deepum::executor {

struct CursorOptions {
  /// How far ahead a synced cursor looks for an ID before calling it inserted.
  uint32_t Lookahead = 16;
  /// Unexplained launches in a row before a synced cursor is lost.
  uint32_t LostAfter = 8;
  /// Launches spent searching (without a resync) before the cursor turns off:
  /// a few iterations' worth, so one odd iteration (evaluation, a checkpoint)
  /// does not switch the plan off.
  uint32_t OffAfterSearching = 4096;
  /// Launches after which the model check decides.
  uint32_t ModelCheckLaunches = 100;
  /// Fewer known IDs than this fraction of the first launches: another model.
  double MinKnownFraction = 0.25;
  /// Marked iterations in a row whose launch sequence differs from the plan's
  /// profile fingerprint before the plan turns off: deepum-profile skips 2
  /// warm-up iterations by default and profiles steady ones, so the program's
  /// first iterations may differ while its steady ones match exactly.
  uint32_t FingerprintIterations = 5;
};

/// What the live launches said about the plan's profile fingerprint.
enum class FingerprintCheck {
  None,     ///< The plan carries no fingerprint: not checked.
  Pending,  ///< No marked iteration matched yet.
  Matched,  ///< A marked iteration's launch sequence had the plan's fingerprint.
  Mismatch, ///< It never did: the plan is off.
};

struct CursorStats {
  uint64_t Launches = 0;
  uint64_t Matched = 0;
  uint64_t Inserted = 0; ///< Launches not in the plan where one was expected.
  uint64_t Missing = 0;  ///< Planned positions skipped.
  uint64_t Resyncs = 0;
  uint64_t Iterations = 0; ///< Completed passes over the plan.
};

/// Why the plan's profile fingerprint is not the hash of its own position_ids
/// ("" when it is, or when the plan carries none).
std::string profileFingerprintMismatch(const CompiledPlan &P);

class PlanCursor {
public:
  enum class State { Searching, Synced, Off };
  static constexpr uint32_t kNoPosition = ~uint32_t{0};

  PlanCursor(const CompiledPlan &P, CursorOptions O = {});

  /// Feeds one launch. Returns the position it matched, or kNoPosition
  /// (inserted, unknown, still searching, off). `Skipped` receives how many
  /// planned positions before it were skipped (missing kernels); their
  /// actions are still worth issuing.
  uint32_t advance(uint64_t ExecutionId, uint32_t &Skipped);

  /// An iteration boundary from the program (deepum_step): the next launch is
  /// expected at position 0.
  void markIteration();

  State state() const { return St; }
  bool off() const { return St == State::Off; }
  /// Position expected next (meaningful when Synced).
  uint32_t expected() const { return Next; }
  const CursorStats &stats() const { return Stats; }
  /// Why the cursor turned off ("" while on).
  const std::string &offReason() const { return OffWhy; }
  /// True once, right after the cursor turned off (for logging once).
  bool takeOffNotice();
  /// True once per wrap from the last position to the first.
  bool takeIterationWrap();
  FingerprintCheck fingerprint() const { return Fingerprint; }

private:
  uint32_t matchSynced(uint64_t Id, uint32_t &Skipped);
  uint32_t search(uint64_t Id);
  void turnOff(std::string Why);
  uint32_t accept(uint32_t Pos);
  void checkFingerprint();

  const CompiledPlan &Plan;
  CursorOptions Opts;
  State St = State::Searching;
  uint32_t Next = 0;
  uint32_t Unexplained = 0;
  uint64_t SearchingFor = 0;
  uint64_t KnownEarly = 0;
  uint64_t SeenEarly = 0;
  bool ModelChecked = false;
  std::vector<uint32_t> Candidates; // positions whose ID matched the last launch
  std::vector<uint64_t> Recent;     // ring of the last ContextLength IDs (searching)
  uint64_t RecentCount = 0;
  uint32_t contextMatch(uint64_t Id);
  std::vector<uint32_t> Scratch;
  std::string OffWhy;
  bool OffNotice = false;
  bool Wrapped = false;
  CursorStats Stats;
  FingerprintCheck Fingerprint = FingerprintCheck::None;
  bool Marked = false;      // an iteration mark was seen: LiveHash covers one iteration
  uint64_t LiveHash = 0;    // FNV-1a over the launches since the last mark
  uint64_t LiveLaunches = 0;
  uint32_t FingerprintMisses = 0;
};

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_PLANCURSOR_H
