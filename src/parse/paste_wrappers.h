// Paste wrappers: what other tools put in front of (or glue onto) a log line
// when it is quoted, relayed or captured. Removed before process prefixes and
// headers are read, so that rules see the engine's own line.
//
//   Markdown quote     `> ` (also nested `> > ` and a bare `>`): a log quoted in
//                      an issue or a chat reply
//   console timestamp  `[2025-11-06T02:10:00.702Z] ` (Jenkins timestamper, CI
//                      consoles) and `2025-11-06T02:10:00.7020000Z ` followed
//                      by a non-envelope text (GitHub Actions raw logs; a CRI
//                      line has `stdout|stderr` after its time and is left alone)
//   grep -n            `1234:` / `1234-` before the line (digits, then ':' or
//                      '-', then something that is not a digit, so `12:34:56`
//                      and `2025-01-02` are not taken)
//   kubectl --prefix   `[pod/NAME/CONTAINER] `
//   TorchServe         `<time> [LEVEL] W-9000-model_1.0-stdout MODEL_LOG - `
//   tqdm               a progress bar with no newline before the next output:
//                      `...100%|#####| 4/4 [00:02<00:00,  1.50it/s]RuntimeError: x`
//                      gives `RuntimeError: x` (a bar alone is left as it is)
//
// Wrappers may stack (`> [ts] [ts2] msg`); they are removed outermost first.
// Every check starts with a first-byte test, since this runs on every line.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::parse {

// Returns `line` without the paste wrappers above (a view into `line`).
std::string_view StripPasteWrappers(std::string_view line);

// True if StripPasteWrappers leaves every line that starts with `head` as
// it is: its first bytes already rule every wrapper out. False when they do
// not (a `>`, an ISO time's or `[pod/`'s first bytes, digits).
bool NoWrapperCanStart(std::string_view head);

// The text after a tqdm bar glued to it, or `line` when there is none.
std::string_view AfterProgressBar(std::string_view line);

// What AfterProgressBar reacts to (lowercase): a line holding none of these
// is returned as it is.
const std::vector<std::string>& ProgressBarTriggers();

}  // namespace fingerprintd::parse
