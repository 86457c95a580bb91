#include "source/glob.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "source/source_health.h"

namespace fingerprintd::source {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> Components(std::string_view pattern) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= pattern.size()) {
    size_t slash = pattern.find('/', start);
    if (slash == std::string_view::npos) slash = pattern.size();
    if (slash > start) parts.emplace_back(pattern.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

bool ComponentMatch(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

bool IsDirectory(const std::string& path, bool follow) {
  struct stat st;
  int rc = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  return rc == 0 && S_ISDIR(st.st_mode);
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir == "/") return "/" + name;
  return dir + "/" + name;
}

// A directory entry and what readdir's d_type says it is (no stat), so a
// rescan of 1,000 pod directories costs readdir calls, not a stat per entry.
struct Entry {
  std::string name;
  unsigned char type = DT_UNKNOWN;  // DT_DIR, DT_REG, DT_LNK, ... or DT_UNKNOWN
};

// A directory that cannot be listed goes to `errors` (when given) unless it
// vanished between being seen and being opened.
std::vector<Entry> ListDir(const std::string& dir, std::vector<GlobError>* errors) {
  std::vector<Entry> entries;
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (d == nullptr) {
    if (errors != nullptr && errno != ENOENT) errors->push_back(GlobError{dir, errno});
    return entries;
  }
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    entries.push_back(Entry{e->d_name, e->d_type});
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return entries;
}

// Whether `path` (entry type `type`) is a directory / a regular file; a
// symlink or an unknown type is resolved with stat.
bool EntryIsDirectory(const std::string& path, unsigned char type, bool follow) {
  if (type == DT_DIR) return true;
  if (type == DT_UNKNOWN || (follow && type == DT_LNK)) return IsDirectory(path, follow);
  return false;
}

// A match of the pattern's last component: a regular file goes to `out`; a
// FIFO, socket or device to `errors` (never to be opened: it could block).
void AddMatch(const std::string& path, unsigned char type, std::set<std::string>* out,
              std::vector<GlobError>* errors) {
  if (type == DT_REG) {
    out->insert(path);
    return;
  }
  if (type == DT_DIR) return;
  struct stat st;
  if (type == DT_UNKNOWN || type == DT_LNK) {
    if (::stat(path.c_str(), &st) != 0) return;  // gone, or a dangling link
    if (S_ISREG(st.st_mode)) {
      out->insert(path);
      return;
    }
    if (S_ISDIR(st.st_mode)) return;
  }
  if (errors != nullptr) errors->push_back(GlobError{path, kNotRegularFile});
}

// Walks parts[i..] below `dir`; files go to `out`, visited directories to `dirs`.
void Walk(const std::string& dir, const std::vector<std::string>& parts, size_t i,
          std::set<std::string>* out, std::set<std::string>* dirs, std::vector<GlobError>* errors,
          int depth) {
  if (depth > 64) return;  // bound the recursion whatever the tree looks like
  if (i == parts.size()) {
    AddMatch(dir, DT_UNKNOWN, out, errors);
    return;
  }
  const std::string& part = parts[i];
  bool last = i + 1 == parts.size();
  if (part == "**") {
    if (!IsDirectory(dir.empty() ? "." : dir, true)) return;
    if (dirs) dirs->insert(dir);
    Walk(dir, parts, i + 1, out, dirs, errors, depth + 1);  // zero directories
    for (const Entry& entry : ListDir(dir, errors)) {
      std::string child = Join(dir, entry.name);
      if (EntryIsDirectory(child, entry.type, /*follow=*/false)) {
        Walk(child, parts, i, out, dirs, errors, depth + 1);
      }
    }
    return;
  }
  if (!HasWildcard(part)) {
    std::string child = Join(dir, part);
    if (last) {
      AddMatch(child, DT_UNKNOWN, out, errors);
    } else if (IsDirectory(child, true)) {
      Walk(child, parts, i + 1, out, dirs, errors, depth + 1);
    }
    return;
  }
  if (dirs) dirs->insert(dir);
  for (const Entry& entry : ListDir(dir, errors)) {
    if (!ComponentMatch(part, entry.name)) continue;
    std::string child = Join(dir, entry.name);
    if (last) {
      AddMatch(child, entry.type, out, errors);
    } else if (EntryIsDirectory(child, entry.type, /*follow=*/true)) {
      Walk(child, parts, i + 1, out, dirs, errors, depth + 1);
    }
  }
}

// The literal directory the walk starts from and the index of the first part after it.
std::string Root(const std::string& pattern, const std::vector<std::string>& parts, size_t* first) {
  std::string root = pattern.starts_with("/") ? "/" : "";
  size_t i = 0;
  while (i + 1 < parts.size() && !HasWildcard(parts[i]) && parts[i] != "**") {
    root = Join(root, parts[i]);
    ++i;
  }
  *first = i;
  return root;
}

bool MatchParts(const std::vector<std::string>& pat, size_t i, const std::vector<std::string>& path,
                size_t j) {
  if (i == pat.size()) return j == path.size();
  if (pat[i] == "**") {
    for (size_t k = j; k <= path.size(); ++k) {
      if (MatchParts(pat, i + 1, path, k)) return true;
    }
    return false;
  }
  if (j == path.size()) return false;
  return ComponentMatch(pat[i], path[j]) && MatchParts(pat, i + 1, path, j + 1);
}

}  // namespace

bool HasWildcard(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

bool GlobMatch(std::string_view pattern, std::string_view path) {
  if (pattern.starts_with("/") != path.starts_with("/")) return false;
  return MatchParts(Components(pattern), 0, Components(path), 0);
}

std::vector<std::string> ExpandGlob(const std::string& pattern) {
  std::vector<std::string> parts = Components(pattern);
  if (parts.empty()) return {};
  size_t first = 0;
  std::string root = Root(pattern, parts, &first);
  std::set<std::string> files;
  Walk(root, parts, first, &files, nullptr, nullptr, 0);
  return {files.begin(), files.end()};
}

std::vector<std::string> GlobDirectories(const std::string& pattern) {
  std::vector<std::string> files, dirs;
  ExpandGlobAndDirectories(pattern, &files, &dirs);
  return dirs;
}

void ExpandGlobAndDirectories(const std::string& pattern, std::vector<std::string>* files,
                              std::vector<std::string>* directories,
                              std::vector<GlobError>* errors) {
  files->clear();
  directories->clear();
  if (errors != nullptr) errors->clear();
  std::vector<std::string> parts = Components(pattern);
  if (parts.empty()) return;
  size_t first = 0;
  std::string root = Root(pattern, parts, &first);
  std::set<std::string> found, dirs;
  Walk(root, parts, first, &found, &dirs, errors, 0);
  if (errors != nullptr) {
    // Where the pattern's literal part ends: a directory that is not there
    // (never made, or removed with everything in it) or cannot be searched.
    struct stat st;
    const std::string where = root.empty() ? "." : root;
    if (::stat(where.c_str(), &st) != 0) {
      errors->push_back(GlobError{where, errno});
    } else if (!S_ISDIR(st.st_mode)) {
      errors->push_back(GlobError{where, ENOTDIR});
    }
  }
  // The directory of a literal last component (a plain path) is watched too,
  // so the file's creation is seen.
  dirs.insert(root.empty() ? "." : root);
  files->assign(found.begin(), found.end());
  directories->assign(dirs.begin(), dirs.end());
}

bool Excluded(const std::vector<std::string>& exclude, std::string_view path) {
  std::string p(path);
  std::string name = fs::path(p).filename().string();
  for (const std::string& glob : exclude) {
    if (fnmatch(glob.c_str(), p.c_str(), 0) == 0 || fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace fingerprintd::source
