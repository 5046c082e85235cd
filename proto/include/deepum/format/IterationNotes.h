//===- deepum/format/IterationNotes.h - How a profile's iterations were found ===//
//
// A profile's Iteration records say where each iteration starts, not how that
// was known. deepum-profile marks iterations it found without marks in
// workload.notes with these sentences (profiler/lib/Recorder.cpp), and
// deepum-plan reads them back to say "by period" rather than "by marks", and
// to refuse a whole run recorded as one iteration as it refuses any profile
// without a complete iteration (planner/lib/Planner.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_ITERATIONNOTES_H
#define DEEPUM_FORMAT_ITERATIONNOTES_H

namespace deepum::format {

/// Begins the note of a profile whose iterations deepum-profile found from
/// the period of the kernel sequence.
inline constexpr const char *kIterationsByPeriodNote =
    "no iteration mark was seen: ";
/// The note of a profile whose whole run deepum-profile recorded as one
/// iteration (no mark, no period).
inline constexpr const char *kWholeRunNote =
    "no iteration mark was seen and the kernel sequence has no period: the whole run is one "
    "iteration";

} // namespace deepum::format

#endif // DEEPUM_FORMAT_ITERATIONNOTES_H
