#include "rules/buffer_matcher.h"

#include <algorithm>
#include <limits>
#include <mutex>

#ifdef FINGERPRINTD_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace fingerprintd::rules {

std::vector<std::string> BufferMatcher::Searched(const std::vector<std::string>& atoms) {
  std::vector<std::string> out;
  for (const std::string& atom : atoms) {
    if (atom.empty() || atom.find('\n') != std::string::npos) return out;
  }
  for (size_t i = 0; i < atoms.size(); ++i) {
    bool holds_another = false;
    for (size_t j = 0; j < atoms.size() && !holds_another; ++j) {
      // Another atom inside this one; of two equal atoms the first is kept.
      holds_another = atoms[j].size() <= atoms[i].size() && (atoms[j] != atoms[i] || j < i) &&
                      atoms[i].find(atoms[j]) != std::string::npos;
    }
    if (!holds_another) out.push_back(atoms[i]);
  }
  return out;
}

std::shared_ptr<const BufferMatcher> BufferMatcher::ForAtoms(
    const std::vector<std::string>& atoms) {
  static std::mutex mu;
  static std::vector<std::string> last_atoms;
  static std::shared_ptr<const BufferMatcher> last;
  std::lock_guard<std::mutex> lock(mu);
  if (last == nullptr || last_atoms != atoms) {
    last = std::make_shared<const BufferMatcher>(atoms);
    last_atoms = atoms;
  }
  return last;
}

#ifdef FINGERPRINTD_HAVE_HYPERSCAN
namespace {

int OnHyperscanMatch(unsigned int /*id*/, unsigned long long /*from*/, unsigned long long to,
                     unsigned int /*flags*/, void* context) {
  static_cast<std::vector<size_t>*>(context)->push_back(static_cast<size_t>(to));
  return 0;
}

void* CompileHyperscan(const std::vector<std::string>& atoms) {
  std::vector<const char*> expressions;
  std::vector<size_t> lengths;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < atoms.size(); ++i) {
    expressions.push_back(atoms[i].data());
    lengths.push_back(atoms[i].size());
    flags.push_back(HS_FLAG_CASELESS);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions.data(), flags.data(), ids.data(), lengths.data(),
                           static_cast<unsigned>(atoms.size()), HS_MODE_BLOCK, nullptr, &db,
                           &error) != HS_SUCCESS) {
    hs_free_compile_error(error);
    return nullptr;
  }
  return db;
}

}  // namespace
#endif

bool BufferMatcher::HasHyperscan() {
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  return true;
#else
  return false;
#endif
}

BufferMatcher::BufferMatcher(const std::vector<std::string>& all_atoms, Backend backend)
    : backend_(backend) {
  const std::vector<std::string> atoms = Searched(all_atoms);
  if (atoms.empty()) return;
  for (const std::string& atom : atoms) {
    for (char c : atom) {
      if (static_cast<unsigned char>(c) >= 0x80) return;  // not ASCII (RuleSet::Atoms never is)
    }
    longest_ = std::max(longest_, atom.size());
  }
  if (backend_ == Backend::kOwn) {
    if (SimdLiteralSearch::UsesAvx2()) {
      search_ = SimdLiteralSearch(atoms);
    } else {
      scanner_ = LiteralScanner(atoms);
    }
    ok_ = true;
    return;
  }
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  hs_database_ = CompileHyperscan(atoms);
  ok_ = hs_database_ != nullptr;
#endif
}

BufferMatcher::~BufferMatcher() {
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  hs_free_database(static_cast<hs_database_t*>(hs_database_));
#endif
}

const char* BufferMatcher::backend_name() const {
  if (backend_ == Backend::kHyperscan) return "hyperscan";
  return SimdLiteralSearch::UsesAvx2() ? "simd-literal-search" : "literal-scanner";
}

BufferMatcher::Scratch::Scratch(const BufferMatcher& matcher) {
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  if (matcher.hs_database_ == nullptr) return;
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(static_cast<const hs_database_t*>(matcher.hs_database_), &scratch) ==
      HS_SUCCESS) {
    hs_scratch_ = scratch;
  }
#else
  (void)matcher;
#endif
}

BufferMatcher::Scratch::~Scratch() {
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  hs_free_scratch(static_cast<hs_scratch_t*>(hs_scratch_));
#endif
}

bool BufferMatcher::Search(std::string_view buffer, std::vector<size_t>* ends, Scratch* scratch,
                           uint64_t* non_plain) const {
  if (!ok_) return false;
  if (backend_ == Backend::kOwn) {
    if (SimdLiteralSearch::UsesAvx2()) {
      search_.FindEnds(buffer, ends, non_plain);
    } else {
      scanner_.FindEnds(buffer, ends);
      if (non_plain != nullptr) SimdLiteralSearch::FindNonPlain(buffer, non_plain);
    }
    return true;
  }
#ifdef FINGERPRINTD_HAVE_HYPERSCAN
  if (scratch->hs_scratch_ == nullptr) return false;
  if (buffer.size() > std::numeric_limits<unsigned>::max()) return false;
  if (hs_scan(static_cast<const hs_database_t*>(hs_database_), buffer.data(),
              static_cast<unsigned>(buffer.size()), 0,
              static_cast<hs_scratch_t*>(scratch->hs_scratch_), OnHyperscanMatch,
              ends) != HS_SUCCESS) {
    return false;
  }
  if (non_plain != nullptr) SimdLiteralSearch::FindNonPlain(buffer, non_plain);
  return true;
#else
  (void)non_plain;
  (void)scratch;
  return false;
#endif
}

}  // namespace fingerprintd::rules
