// Path globs for the file tailer: `*`, `?` and `[...]` inside one path
// component (fnmatch rules, a leading dot is not special), and `**` as a whole
// component for zero or more directories. The kubelet layout is
// `/var/log/pods/*/*/*.log` (<ns>_<pod>_<uid>/<container>/<n>.log).
//
//   std::vector<std::string> files = ExpandGlob("/var/log/pods/**/*.log");
//
// Expansion walks the directories below the pattern's literal prefix, never
// follows directory symlinks under `**` (no loops), and returns regular files
// (symlinks to regular files included) in sorted order. Entry types come
// from readdir (d_type); only symlinks and file systems that do not fill it
// in cost a stat. Unreadable directories are skipped (reported to
// ExpandGlobAndDirectories' `errors`). Threading: stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::source {

// True when the pattern has a wildcard (`*`, `?`, `[`).
bool HasWildcard(std::string_view pattern);

// Matches a whole path against a glob (same rules as ExpandGlob).
bool GlobMatch(std::string_view pattern, std::string_view path);

// Every existing regular file matching `pattern`, sorted. A pattern without
// wildcards returns itself when it exists.
std::vector<std::string> ExpandGlob(const std::string& pattern);

// The directories whose entries can change what `pattern` matches, as far as
// they exist now: the literal prefix, plus every directory under it that a
// wildcard component or `**` may descend into. For inotify watches.
std::vector<std::string> GlobDirectories(const std::string& pattern);

// A directory the walk could not list: the pattern's literal prefix missing
// (ENOENT) or not a directory (ENOTDIR), or a directory it reads that cannot
// be opened (EACCES, ...); or a match that is not a regular file (a FIFO,
// socket or device: error source::kNotRegularFile), which is never a file
// the glob gives.
struct GlobError {
  std::string path;
  int error = 0;  // errno, or kNotRegularFile (source_health.h)
  bool operator==(const GlobError&) const = default;
};

// Both of the above from one walk (the tailer's rescan); `errors` (optional)
// receives what could not be listed, so the caller can say why a glob
// matches less than it should. A directory that vanishes during the walk is
// not an error (the next walk sees it gone).
void ExpandGlobAndDirectories(const std::string& pattern, std::vector<std::string>* files,
                              std::vector<std::string>* directories,
                              std::vector<GlobError>* errors = nullptr);

// True when `path` or its file name matches one of the exclude globs.
bool Excluded(const std::vector<std::string>& exclude, std::string_view path);

}  // namespace fingerprintd::source
