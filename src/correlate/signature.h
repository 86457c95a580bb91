// The signature of a failure: what an incident is, whatever deployment, node,
// rank or run it happened in. The same new failure on twelve deployments is
// twelve incidents (each deployment pages on its own) with ONE signature, so
// an operator sees that it is one failure seen in twelve places, and a rule
// author sees which `unknown` failure is worth a rule (rules/README.md, "From
// a signature to a rule").
//
// The masked form: the incident's class, its exception type, its message with
// the values masked (numbers, sizes, paths, addresses, hashes, model and
// repository names, quoted strings) and its raise site (module:function, the
// innermost frame in application code); without an exception, the symptom
// line masked the same way. The signature is "sig-" + 16 hex digits of the
// FNV-1a 64 of that form. kSignatureVersion names the normaliser: a change to
// the masking is a new version, so signatures of two versions never compare.
//
//   MaskValues("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has ...")
//     == "CUDA out of memory. Tried to allocate <size>. GPU <n> has ..."
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace fingerprintd::correlate {

inline constexpr int kSignatureVersion = 1;

// `text` with every value masked, whitespace runs collapsed.
std::string MaskValues(std::string_view text);

// The masked form of a cause: class, exception type (or "" for a symptom
// line), masked message, raise site; one field per line.
std::string MaskedCause(std::string_view rule_class, std::string_view exception_line,
                        std::string_view symptom_line, std::string_view raised_in);

// "sig-" + Hex64(Fnv1a64(MaskedCause(...))).
std::string Signature(std::string_view rule_class, std::string_view exception_line,
                      std::string_view symptom_line, std::string_view raised_in);

}  // namespace fingerprintd::correlate
