// Privileges for tests of "permission denied": the suite runs as root in CI
// and in the dev container, and root reads a chmod 000 file anyway
// (CAP_DAC_OVERRIDE). These take the override away the way a daemon runs
// without it (another user, a container with its capabilities dropped), so
// chmod 000 really fails:
//
//   { WithoutDacOverride scope; EXPECT_LT(open("f", O_RDONLY), 0); }  // this thread
//   DropDacOverrideForExec();   // in a forked child before execv: the daemon
//
// Capabilities are per thread; the scope restores this thread's on exit. The
// bounding-set drop is for a child process only (it cannot be undone).
#pragma once

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fingerprintd::testing {

class WithoutDacOverride {
 public:
  WithoutDacOverride() {
    header_.version = _LINUX_CAPABILITY_VERSION_3;
    header_.pid = 0;
    if (::syscall(SYS_capget, &header_, saved_) != 0) return;
    __user_cap_data_struct lowered[2] = {saved_[0], saved_[1]};
    lowered[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    changed_ = ::syscall(SYS_capset, &header_, lowered) == 0;
  }
  ~WithoutDacOverride() {
    if (changed_) ::syscall(SYS_capset, &header_, saved_);
  }
  WithoutDacOverride(const WithoutDacOverride&) = delete;
  WithoutDacOverride& operator=(const WithoutDacOverride&) = delete;

 private:
  __user_cap_header_struct header_{};
  __user_cap_data_struct saved_[2]{};
  bool changed_ = false;
};

// For a forked child about to exec the daemon: as root, exec grants every
// capability of the bounding set, so the two are dropped from it.
inline void DropDacOverrideForExec() {
  ::prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0);
  ::prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH, 0, 0, 0);
}

}  // namespace fingerprintd::testing
