// ReleasePolicy: how far the daemon releases a tailed file's disk blocks (the
// file source's `release_read_bytes: true`; the mechanism is
// Tailer::AllowRelease/Release, tailer.h "Released heads"), so that its
// allocated blocks stay under the source's `max_retained_bytes` (the bound)
// while the daemon keeps up with the writer.
//
//   ReleasePolicy policy(bound);
//   policy.OnLine(offset);                  // every line handed to the pipeline
//   if (policy.due()) ...                   // commit a checkpoint now, then release
//   uint64_t to = policy.Target(safe, next, &forced);   // before the checkpoint
//   policy.Allowed(tailer.AllowRelease(stream, to));
//
// Only what a committed checkpoint no longer needs is released: below the
// pipeline's safe position, so a restart re-reads exactly what it would have.
// The pipeline may hold that position far back (a start-up line a rule may
// still need within its maxspan, 30 min of log time), and a busy server
// writes a lot in 30 minutes, so one more rule bounds what is kept:
//   * due(): a release is due once bound/2 bytes were read past the last
//     allowed offset; the daemon then commits a checkpoint and releases (it
//     also releases after every checkpoint of its timer).
//   * Target(safe, next): the safe position when it lies within bound/4 of
//     `next` (the next line to read); otherwise the oldest line start sampled
//     within bound/4 of `next`, and *forced is set (the daemon counts it in
//     fingerprintd_evictions_total{what="retained_bytes"}). A restart then
//     resumes at the target, not at the safe position: the lines between were
//     read once and are not read again, and what the pipeline held them for
//     is missing (a failure that needed a start-up line from there is
//     reported as partial instead of confirmed).
// So at most bound/4 of read bytes stay after a release and the next one is
// due bound/4 later: read bytes kept on disk stay under bound/2 plus one
// read (TailerOptions::max_read_per_call, 8 MiB); the other half of the bound
// is room for bytes written and not read yet. A writer faster than the daemon
// for long enough, or a daemon stopped, goes over it; nothing is dropped.
//
// Threading: a value, used on the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <deque>

namespace fingerprintd::source {

class ReleasePolicy {
 public:
  // `bound`: the source's max_retained_bytes.
  explicit ReleasePolicy(uint64_t bound);

  // A line starting at stream offset `offset` was handed out.
  void OnLine(uint64_t offset);
  // A release is due (see above); cleared by Allowed().
  bool due() const { return due_; }
  // Where to release up to, given the pipeline's safe offset and the next
  // line's offset; never below what was allowed already.
  uint64_t Target(uint64_t safe, uint64_t next, bool* forced) const;
  // The tailer allowed the release up to `offset` (Tailer::AllowRelease).
  void Allowed(uint64_t offset);
  uint64_t allowed() const { return allowed_; }
  uint64_t bound() const { return bound_; }

 private:
  uint64_t bound_;
  uint64_t step_;         // distance between sampled line starts
  uint64_t allowed_ = 0;  // stream offset the release was allowed up to
  uint64_t next_sample_ = 0;
  std::deque<uint64_t> samples_;  // line starts, ascending, at least step_ apart
  bool due_ = false;
};

}  // namespace fingerprintd::source
