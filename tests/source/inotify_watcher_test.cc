// InotifyWatcher (source/inotify_watcher.h) on a real directory: one watch
// shared by two paths to it, and watched again after the directory is
// deleted and made again.
#include "source/inotify_watcher.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "testing/scratch_path.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;

// Two paths to one directory (the directory and a symlink to it) share one
// inotify watch: the second path got no events, and once the directory was
// deleted and created again it was never watched again.
TEST(InotifyWatcherTest, TwoPathsToOneDirectoryBothGetItsEventsAndAreWatchedAgainAfterARecreate) {
  fs::path dir = testing::ScratchPath("inotify");
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  auto watcher = InotifyWatcher::Create();
  ASSERT_TRUE(watcher.ok());
  const std::string real = (dir / "real").string(), link = (dir / "link").string();
  ASSERT_TRUE((*watcher)->WatchDirectory(real));
  ASSERT_TRUE((*watcher)->WatchDirectory(link));
  auto drain = [&] {
    struct pollfd pfd = {(*watcher)->fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, 5000), 1);
    std::vector<InotifyWatcher::Event> events;
    (*watcher)->Drain(&events);
    std::set<std::string> paths;
    for (const auto& e : events) paths.insert(e.path);
    return paths;
  };
  std::ofstream(dir / "real" / "0.log") << "a\n";
  std::set<std::string> paths = drain();
  EXPECT_TRUE(paths.count(real + "/0.log")) << "the directory's own path";
  EXPECT_TRUE(paths.count(link + "/0.log")) << "the symlink's path";
  // Deleted and made again: both paths are watched again.
  fs::remove_all(dir / "real");
  drain();
  EXPECT_EQ((*watcher)->watches(), 0u);
  fs::create_directories(dir / "real");
  ASSERT_TRUE((*watcher)->WatchDirectory(real));
  ASSERT_TRUE((*watcher)->WatchDirectory(link));
  std::ofstream(dir / "real" / "1.log") << "b\n";
  paths = drain();
  EXPECT_TRUE(paths.count(link + "/1.log"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fingerprintd::source
