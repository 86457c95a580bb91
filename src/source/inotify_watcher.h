// InotifyWatcher: the tailer's change notifications. Watches directories (the
// glob directories and the directories of every tailed file and of its
// symlink target) for entry changes and writes; the daemon waits on fd() with
// an asio::posix::stream_descriptor and calls Tailer::HandleInotify when it is
// readable.
//
// When inotify is unavailable or its watch limit is hit, WatchDirectory
// returns false and exhausted() becomes true: the daemon then polls
// (TailerConfig::poll_interval_us) as well. Directories are never unwatched
// explicitly; a deleted directory's watch goes away with it.
//
// Threading: single-threaded, on the tailer's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/status.h"

namespace fingerprintd::source {

class InotifyWatcher {
 public:
  struct Event {
    std::string path;  // directory + "/" + name, or the directory itself
    uint32_t mask = 0;
  };

  // Creates a non-blocking, close-on-exec inotify instance.
  static StatusOr<std::unique_ptr<InotifyWatcher>> Create();
  ~InotifyWatcher();

  int fd() const { return fd_; }
  // Watches `dir` (idempotent). False when the watch could not be added (the
  // limit is exhausted, or the directory is unreadable).
  bool WatchDirectory(const std::string& dir);
  // Reads every pending event into `out`. Returns false when the kernel
  // queue overflowed (events were lost: rescan everything).
  bool Drain(std::vector<Event>* out);
  bool exhausted() const { return exhausted_; }
  size_t watches() const { return by_dir_.size(); }

 private:
  explicit InotifyWatcher(int fd) : fd_(fd) {}
  int fd_ = -1;
  bool exhausted_ = false;
  std::map<std::string, int> by_dir_;
  // Every path watched through a descriptor: two paths to one directory (a
  // symlink) share it, get its events each, and both lose it together.
  std::map<int, std::vector<std::string>> by_wd_;
};

}  // namespace fingerprintd::source
