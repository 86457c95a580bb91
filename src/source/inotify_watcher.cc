#include "source/inotify_watcher.h"

#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace fingerprintd::source {

StatusOr<std::unique_ptr<InotifyWatcher>> InotifyWatcher::Create() {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return FailedPreconditionError(std::string("inotify_init1: ") + strerror(errno));
  return std::unique_ptr<InotifyWatcher>(new InotifyWatcher(fd));
}

InotifyWatcher::~InotifyWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

bool InotifyWatcher::WatchDirectory(const std::string& dir) {
  if (by_dir_.count(dir)) return true;
  constexpr uint32_t kMask = IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                             IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF |
                             IN_ONLYDIR;
  int wd = inotify_add_watch(fd_, dir.c_str(), kMask);
  if (wd < 0) {
    if (errno == ENOSPC || errno == ENOMEM) exhausted_ = true;
    return false;
  }
  // Two paths of the same directory (a symlink) share a watch descriptor.
  by_dir_[dir] = wd;
  by_wd_[wd].push_back(dir);
  return true;
}

bool InotifyWatcher::Drain(std::vector<Event>* out) {
  bool complete = true;
  alignas(struct inotify_event) char buf[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: nothing more
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        complete = false;
        continue;
      }
      auto it = by_wd_.find(ev->wd);
      if (it == by_wd_.end()) continue;
      if (ev->mask & IN_IGNORED) {  // the directory went away: every path to it
        for (const std::string& dir : it->second) by_dir_.erase(dir);
        by_wd_.erase(it);
        continue;
      }
      for (const std::string& dir : it->second) {
        Event& e = out->emplace_back();
        e.path = ev->len > 0 ? dir + "/" + std::string(ev->name) : dir;
        e.mask = ev->mask;
      }
    }
    // Room left for another event: the queue was empty after this read, and
    // an event queued since makes the descriptor readable again.
    if (static_cast<size_t>(n) + sizeof(struct inotify_event) + NAME_MAX + 1 <= sizeof(buf)) break;
  }
  return complete;
}

}  // namespace fingerprintd::source
