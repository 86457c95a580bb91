// `jsonl` socket framing: records give their text and labels, records cut
// anywhere give what the whole give, and bad input is counted and skipped
// without disturbing the next line. (`lines` connections: the naive-split
// oracle in socket_streams_test.cc.)
#include "source/socket_framing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "testing/counting_events.h"

namespace fingerprintd::source {
namespace {

using testing::CountingEvents;
using ::testing::ElementsAre;

struct Decoded {
  std::vector<std::string> lines;
  std::vector<StreamLabels> labels;
};

Decoded Decode(const std::vector<std::string>& chunks, size_t cap, CountingEvents* events,
               bool deliver_partial = false, JsonFields fields = JsonFields::Defaults()) {
  Decoded out;
  JsonlDecoder decoder(cap, std::move(fields), *events);
  auto on_line = [&](std::string_view text, const StreamLabels& labels) {
    out.lines.emplace_back(text);
    out.labels.push_back(labels);
  };
  for (const std::string& c : chunks) decoder.Append(c, on_line);
  decoder.Finish(deliver_partial, on_line);
  return out;
}

const std::string& Label(const StreamLabels& labels, StreamLabel l) {
  return labels[static_cast<size_t>(l)];
}

TEST(SocketFramingTest, JsonlTakesTheTextFromLogThenMessage) {
  CountingEvents events;
  Decoded got = Decode({R"({"message":"from message","log":"from log\n"})"
                        "\n"
                        R"({"message":"only message"})"
                        "\n"},
                       1024, &events);
  EXPECT_THAT(got.lines, ElementsAre("from log", "only message"));
}

TEST(SocketFramingTest, JsonlReadsVectorKubernetesLogsFields) {
  CountingEvents events;
  Decoded got =
      Decode({R"({"file":"/var/log/pods/inference_qwen3-7d9f8c6b5-x2x9k_0f3e/vllm/0.log",)"
              R"("kubernetes":{"container_name":"vllm","pod_labels":{"app":"qwen3"},)"
              R"("pod_name":"qwen3-7d9f8c6b5-x2x9k","pod_namespace":"inference"},)"
              R"("message":"ERROR 03-04 10:15:19 boom","source_type":"kubernetes_logs",)"
              R"("stream":"stderr","timestamp":"2026-03-04T10:15:19.123Z"})"
              "\n"},
             1024, &events);
  ASSERT_THAT(got.lines, ElementsAre("ERROR 03-04 10:15:19 boom"));
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kNamespace), "inference");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kPod), "qwen3-7d9f8c6b5-x2x9k");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kContainer), "vllm");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kFile),
            "/var/log/pods/inference_qwen3-7d9f8c6b5-x2x9k_0f3e/vllm/0.log");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kStream), "stderr");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kDeployment), "");
}

TEST(SocketFramingTest, JsonlReadsFluentBitKubernetesFilterFields) {
  CountingEvents events;
  Decoded got =
      Decode({R"({"date":1772619319.123,"log":"INFO 03-04 10:15:19 up\n","stream":"stdout",)"
              R"("time":"2026-03-04T10:15:19.123Z","kubernetes":{"pod_name":"qwen3-0",)"
              R"("namespace_name":"inference","pod_id":"0f3e","labels":{"app":"qwen3"},)"
              R"("host":"node-1","container_name":"vllm","docker_id":"abc",)"
              R"("container_image":"vllm/vllm-openai:v0.11.2"}})"
              "\n"},
             1024, &events);
  ASSERT_THAT(got.lines, ElementsAre("INFO 03-04 10:15:19 up"));
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kNamespace), "inference");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kPod), "qwen3-0");
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kContainer), "vllm");
}

TEST(SocketFramingTest, ConfiguredFieldsReplaceTheDefaults) {
  JsonFields fields = JsonFields::Defaults();
  fields.text = {"payload.text"};
  fields.labels[static_cast<size_t>(StreamLabel::kDeployment)] = {"kubernetes.labels.app"};
  CountingEvents events;
  Decoded got = Decode({R"({"log":"not this","payload":{"text":"this"},)"
                        R"("kubernetes":{"labels":{"app":"qwen3"}}})"
                        "\n"},
                       1024, &events, false, fields);
  ASSERT_THAT(got.lines, ElementsAre("this"));
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kDeployment), "qwen3");
}

TEST(SocketFramingTest, InvalidJsonIsCountedAndTheNextLineIsStillDecoded) {
  CountingEvents events;
  Decoded got = Decode({"{\"log\":\"cut\n", "not json at all\n", "[\"log\",\"x\"]\n", "42\n",
                        "{\"log\":\"a\"} trailing\n", std::string("\x00\xff\xfe{\n", 5),
                        "{\"pod\":\"p\"}\n", "{\"log\":\"next\"}\n"},
                       1024, &events);
  EXPECT_THAT(got.lines, ElementsAre("next"));
  EXPECT_EQ(events.Dropped(DropReason::kInvalidJson), 6u);
  EXPECT_EQ(events.Dropped(DropReason::kNoTextField), 1u);
}

TEST(SocketFramingTest, ValuesInsideArraysOrOfOtherTypesAreNotTakenAsText) {
  CountingEvents events;
  Decoded got = Decode({R"({"tags":[{"log":"in an array"}],"log":7})"
                        "\n"},
                       1024, &events);
  EXPECT_TRUE(got.lines.empty());
  EXPECT_EQ(events.Dropped(DropReason::kNoTextField), 1u);
}

// Issue 42: one JSON decoder for socket frames and Docker records
// (common/json_object.h). A lone surrogate used to drop the whole frame as
// invalid JSON here while the Docker path kept its line: now both keep the
// line with U+FFFD in its place.
TEST(SocketFramingTest, ALoneSurrogateIsAReplacementCharacterAndTheLineIsKept) {
  CountingEvents events;
  Decoded got = Decode({R"({"log":"x\udc00y \ud800","pod":"p"})"
                        "\n"},
                       1024, &events);
  EXPECT_THAT(got.lines, ElementsAre("x\xEF\xBF\xBDy \xEF\xBF\xBD"));
  EXPECT_EQ(events.Dropped(DropReason::kInvalidJson), 0u);
}

TEST(SocketFramingTest, ATextOfSeveralLinesGivesOneLogLineEach) {
  CountingEvents events;
  Decoded got = Decode({R"({"log":"Traceback (most recent call last):\n  File \"x.py\"\r\n"})"
                        "\n"},
                       1024, &events);
  EXPECT_THAT(got.lines, ElementsAre("Traceback (most recent call last):", "  File \"x.py\"\r"));
}

TEST(SocketFramingTest, RandomBytesAsJsonlAreCountedNeverACrash) {
  std::mt19937 rng(7);
  CountingEvents events;
  JsonlDecoder decoder(1024, JsonFields::Defaults(), events);
  uint64_t lines = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    decoder.Append(bytes, [&](std::string_view, const StreamLabels&) { ++lines; });
  }
  EXPECT_GT(events.Dropped(DropReason::kInvalidJson), 100u);
  EXPECT_EQ(lines, 0u);
}

// The oracle for the jsonl scanner: nlohmann's DOM, each dotted path walked
// through objects, the first path holding a string winning.
JsonResult OracleDecode(std::string_view line, const JsonFields& fields, std::string* text,
                        StreamLabels* labels) {
  text->clear();
  for (std::string& l : *labels) l.clear();
  nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return JsonResult::kInvalidJson;
  auto first = [&](const std::vector<std::string>& paths, std::string* out) {
    for (const std::string& path : paths) {
      const nlohmann::json* j = &doc;
      for (size_t start = 0; j != nullptr;) {
        const size_t dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
        auto it = j->is_object() ? j->find(key) : j->end();
        j = it == j->end() ? nullptr : &*it;
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      if (j != nullptr && j->is_string()) {
        *out = j->get<std::string>();
        return true;
      }
    }
    return false;
  };
  const bool has_text = first(fields.text, text);
  for (size_t i = 0; i < kStreamLabelCount; ++i) first(fields.labels[i], &(*labels)[i]);
  return has_text ? JsonResult::kOk : JsonResult::kNoTextField;
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

// `record` with each \uXXXX escape of a lone surrogate (a high one not
// followed by a low one, a low one not after a high one) spelt \ufffd.
std::string LoneSurrogatesReplaced(std::string_view record) {
  auto unit = [&](size_t at, uint32_t* out) {  // the \uXXXX escape at `at`, if it is one
    if (at + 6 > record.size() || record[at] != '\\' || record[at + 1] != 'u') return false;
    for (size_t k = at + 2; k < at + 6; ++k) {
      if (!std::isxdigit(static_cast<unsigned char>(record[k]))) return false;
    }
    return std::sscanf(std::string(record.substr(at + 2, 4)).c_str(), "%4x", out) == 1;
  };
  std::string out;
  for (size_t i = 0; i < record.size();) {
    uint32_t cp = 0;
    if (record[i] == '\\' && i + 1 < record.size() && record[i + 1] != 'u') {
      out.append(record.substr(i, 2));  // another escape, the backslash's own included
      i += 2;
    } else if (unit(i, &cp) && cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low = 0;
      if (unit(i + 6, &low) && low >= 0xDC00 && low <= 0xDFFF) {
        out.append(record.substr(i, 12));
        i += 12;
      } else {
        out += "\\ufffd";
        i += 6;
      }
    } else if (unit(i, &cp) && cp >= 0xDC00 && cp <= 0xDFFF) {
      out += "\\ufffd";
      i += 6;
    } else {
      out += record[i++];
    }
  }
  return out;
}

// Random JSON records: the wanted keys among others, nested objects and
// arrays, every escape, raw multi-byte UTF-8, random spacing.
class RecordGenerator {
 public:
  explicit RecordGenerator(uint32_t seed) : rng_(seed) {}

  std::string Record() { return Object(0); }

  // Deletes, inserts or duplicates a few bytes, or cuts the record.
  std::string Mutate(std::string s) {
    static const char kBytes[] = "{}[]\",:\\ x0-.eu";
    const int n = 1 + static_cast<int>(rng_() % 3);
    for (int i = 0; i < n && !s.empty(); ++i) {
      const size_t at = rng_() % s.size();
      switch (rng_() % 4) {
        case 0:
          s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, kBytes[rng_() % (sizeof(kBytes) - 1)]);
          break;
        case 2:
          s.insert(at, s.substr(at, rng_() % 8));
          break;
        default:
          s.resize(at);
          break;
      }
    }
    return s;
  }

 private:
  std::string Space() {
    static const char* kSpaces[] = {"", "", "", " ", "\t", "  ", "\r\n"};
    return kSpaces[rng_() % 7];
  }
  std::string String() {
    static const char* kPieces[] = {
        "a",       "b",         "Z",    " ",   "é",   "€",   "😀",       "\\n",     "\\t",
        "\\r",     "\\\"",      "\\\\", "\\/", "\\b", "\\f", "\\u00e9", "\\u20AC", "\\ud83d\\ude00",
        "\\u0000", "Traceback", "."};
    std::string out = "\"";
    const size_t n = rng_() % 8;
    for (size_t i = 0; i < n; ++i) out += kPieces[rng_() % 21];
    return out + "\"";
  }
  std::string Value(int depth) {
    switch (rng_() % (depth < 3 ? 8 : 6)) {
      case 0:
      case 1:
      case 2:
        return String();
      case 3:
        return std::to_string(static_cast<int>(rng_() % 2000) - 1000) +
               (rng_() % 3 == 0 ? ".25e-3" : "");
      case 4: {
        static const char* kLiterals[] = {"true", "false", "null"};
        return kLiterals[rng_() % 3];
      }
      case 5:
        return Array(depth);
      default:
        return Object(depth + 1);
    }
  }
  std::string Array(int depth) {
    std::string out = "[" + Space();
    const size_t n = rng_() % 3;
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + Space() + Value(depth + 1) + Space();
    return out + "]";
  }
  std::string Object(int depth) {
    static const char* kKeys[] = {
        "log",        "message",  "pod",           "namespace",      "container",  "file", "stream",
        "kubernetes", "pod_name", "pod_namespace", "container_name", "deployment", "x",    ""};
    std::vector<const char*> keys(std::begin(kKeys), std::end(kKeys));
    std::shuffle(keys.begin(), keys.end(), rng_);
    keys.resize(rng_() % 6);  // distinct keys: a DOM keeps only one of two equal keys
    std::string out = "{" + Space();
    for (size_t i = 0; i < keys.size(); ++i) {
      out += (i ? "," : "") + Space() + "\"" + keys[i] + "\"" + Space() + ":" + Space() +
             Value(depth) + Space();
    }
    return out + "}";
  }

  std::mt19937 rng_;
};

TEST(SocketFramingTest, TheJsonScannerAgreesWithNlohmannsDomOnRandomAndMutatedRecords) {
  JsonFields fields = JsonFields::Defaults();
  fields.text = {"log", "message", "kubernetes.x"};
  RecordGenerator gen(20261130);
  JsonObjectScanner scanner;
  int compared = 0, invalid = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string record = gen.Record();
    if (i % 2 == 1) record = gen.Mutate(record);
    std::string text, oracle_text;
    StreamLabels labels, oracle_labels;
    const JsonResult got = DecodeJsonLine(record, fields, scanner, &text, &labels);
    if (!ValidUtf8(record)) continue;  // the scanner passes bytes on; the DOM refuses them
    // The DOM refuses a lone surrogate the scanner takes as U+FFFD: it is
    // given the record with those escapes spelt \ufffd.
    const JsonResult want =
        OracleDecode(LoneSurrogatesReplaced(record), fields, &oracle_text, &oracle_labels);
    ASSERT_EQ(got, want) << record;
    if (got != JsonResult::kInvalidJson) {
      ASSERT_EQ(text, oracle_text) << record;
      ASSERT_EQ(labels, oracle_labels) << record;
    }
    ++compared;
    invalid += got == JsonResult::kInvalidJson;
  }
  EXPECT_GT(compared, 15000);
  EXPECT_GT(invalid, 3000);  // the mutations reach the error paths
}

TEST(SocketFramingTest, ATenMegabyteJsonlRecordIsTruncatedAndProcessedCountedOnceAsLineTooLong) {
  // As a `lines` line is: cut at the cap, processed, counted once. Before, the
  // record was cut as raw bytes, then dropped as invalid JSON: counted twice.
  const size_t cap = 1 << 20;
  CountingEvents events;
  std::string text = "ERROR 01-02 03:04:05 x.py:1] " + std::string(10 << 20, 'x');
  std::string record = R"({"log":")" + text + R"(\n","kubernetes":{"pod_name":"vllm-0"}})";
  Decoded got = Decode({record + "\n" + R"({"log":"after"})" + "\n"}, cap, &events);
  ASSERT_EQ(got.lines.size(), 2u);
  EXPECT_EQ(got.lines[0], text.substr(0, cap - 8));
  EXPECT_EQ(Label(got.labels[0], StreamLabel::kPod), "vllm-0");  // the labels after the text kept
  EXPECT_EQ(got.lines[1], "after");
  EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1u);
  EXPECT_EQ(events.Dropped(DropReason::kInvalidJson), 0u);
}

TEST(SocketFramingTest, ALongJsonlRecordCutAnywhereDecodesAsWhole) {
  // Escapes, multi-byte UTF-8 and a surrogate pair around the cut: the text is
  // shortened between characters, never inside one, whatever the chunks.
  const size_t cap = 1024;
  std::string body;
  for (int i = 0; body.size() < 3000; ++i) {
    body += i % 4 == 0   ? "\\u00e9"
            : i % 4 == 1 ? "\xc3\xa9"
            : i % 4 == 2 ? "\\ud83d\\ude00"
                         : "\\\"";
  }
  std::string records = R"({"pod":"p","log":")" + body + R"("})" + "\n" + R"({"log":"ok"})" + "\n";
  CountingEvents whole_events;
  Decoded whole = Decode({records}, cap, &whole_events);
  ASSERT_EQ(whole.lines.size(), 2u);
  EXPECT_LE(whole.lines[0].size(), cap);
  EXPECT_GT(whole.lines[0].size(), cap / 3);  // escapes decode shorter: \u00e9 is 2 bytes
  const std::string full = nlohmann::json::parse("\"" + body + "\"").get<std::string>();
  EXPECT_TRUE(full.starts_with(whole.lines[0]));  // whole characters only
  EXPECT_EQ(Label(whole.labels[0], StreamLabel::kPod), "p");
  EXPECT_EQ(whole_events.Dropped(DropReason::kLineTooLong), 1u);
  EXPECT_EQ(whole_events.Dropped(DropReason::kInvalidJson), 0u);
  for (size_t at = 0; at <= records.size(); at += 7) {
    CountingEvents events;
    Decoded got = Decode({records.substr(0, at), records.substr(at)}, cap, &events);
    ASSERT_EQ(got.lines, whole.lines) << "cut at " << at;
    EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1u) << "cut at " << at;
    EXPECT_EQ(events.Dropped(DropReason::kInvalidJson), 0u) << "cut at " << at;
  }
}

TEST(SocketFramingTest, AJsonlRecordOfTooManyFieldsIsCutCountedOnceAndDropped) {
  CountingEvents events;
  std::string fields;
  while (fields.size() < 4 * 1024 + 8192) fields += R"("k":1,)";
  Decoded got = Decode({"{" + fields + R"("log":"lost"})" + "\n" + R"({"log":"after"})" + "\n"},
                       1024, &events);
  EXPECT_THAT(got.lines, ElementsAre("after"));
  EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1u);
  EXPECT_EQ(events.Dropped(DropReason::kInvalidJson), 0u);
}

}  // namespace
}  // namespace fingerprintd::source
