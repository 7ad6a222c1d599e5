#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/json.h"
#include "api/merge_patch.h"
#include "api/object_codec.h"
#include "api/yaml_codec.h"

namespace warren::api {
namespace {

constexpr const char* kManifest = R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata:
  name: pool
  namespace: default
  labels:
    app: demo
  managedFields:            # metadata we do not model
  - manager: kubectl
spec:
  replicas: 3
  futureField: {nested: [1, 2, {deep: true}]}
  template:
    spec:
      containers:
      - name: main
        image: base
        livenessProbe:      # a pod field Warren ignores
          exec: {command: [true]}
status:
  replicas: 1
extraTopLevel: "kept"
)";

TEST(YamlCodec, ManifestRoundTripsWithUnknownFieldsKept) {
  auto doc = ParseYaml(kManifest);
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto obj = ObjectFromJson(*doc);
  ASSERT_TRUE(obj.ok()) << obj.status();
  EXPECT_EQ(obj->metadata.name, "pool");
  EXPECT_EQ(obj->metadata.labels.at("app"), "demo");
  EXPECT_EQ(obj->metadata.extra["managedFields"][0]["manager"], "kubectl");

  Json back = ObjectToJson(*obj);
  EXPECT_EQ(back, *doc);
  EXPECT_EQ(back["spec"]["futureField"]["nested"][2]["deep"], true);
  EXPECT_EQ(back["extraTopLevel"], "kept");

  // Through YAML text and back again: still the same document.
  auto again = ParseYaml(DumpYaml(back));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *doc);
  // And through JSON text.
  auto from_json = ObjectFromJsonText(ObjectToJsonText(*obj));
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(ObjectToJson(*from_json), *doc);
}

TEST(YamlCodec, ScalarsFollowTheCoreSchema) {
  auto doc = ParseYaml(R"(
a: 1
b: "1"
c: true
d: 'true'
e: null
f: ~
g:
h: 1.5
i: 0x1f
j: yes
k: -7
l: !!str 12
m: 1e3
n: "multi
  word"
o: |
  line one
  line two
)");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const Json& j = *doc;
  EXPECT_EQ(j["a"], 1);
  EXPECT_EQ(j["b"], "1");
  EXPECT_EQ(j["c"], true);
  EXPECT_EQ(j["d"], "true");
  EXPECT_TRUE(j["e"].is_null());
  EXPECT_TRUE(j["f"].is_null());
  EXPECT_TRUE(j["g"].is_null());
  EXPECT_EQ(j["h"], 1.5);
  EXPECT_EQ(j["i"], 31);
  EXPECT_EQ(j["j"], "yes");  // YAML 1.2: not a boolean
  EXPECT_EQ(j["k"], -7);
  EXPECT_EQ(j["l"], "12");
  EXPECT_EQ(j["m"], 1000.0);
  EXPECT_EQ(j["n"], "multi word");
  EXPECT_EQ(j["o"], "line one\nline two\n");
}

TEST(YamlCodec, DumpQuotesStringsThatWouldChangeType) {
  Json j = {{"a", "true"},        {"b", "1"},           {"c", ""},
            {"d", "null"},        {"e", "plain"},       {"f", 2},
            {"g", 1.0},           {"k", "---"},         {"l", "- x"},
            {"m", "a: b"},        {"n", "x,y"},         {"h", "x\ny\n"},
            {"i", Json::array()}, {"j", Json::object()}};
  auto back = ParseYaml(DumpYaml(j));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << DumpYaml(j);
  EXPECT_EQ(*back, j) << DumpYaml(j);
  EXPECT_TRUE((*back)["g"].is_number_float());
}

// What kubectl prints plain stays plain; indicators that would change the meaning are quoted.
TEST(YamlCodec, DumpKeepsImagesAndUrlsPlain) {
  Json j = {{"image", "registry:5000/base:1.0"},
            {"url", "http://llm-gateway:8080/a#frag"},
            {"time", "2030-01-01T00:00:00Z"},
            {"hash", "a #b"},
            {"colon", "end:"},
            {"star", "*x"},
            {"bang", "!x"},
            {"dots", "...x"},
            {"q", "?x"},
            {"pct", "%x"},
            {"flag", "-c"},
            {"dash", "- x"},
            {"json", R"({"a":"b c","d":[1]})"},
            {"both", R"(it's "x")"}};
  std::string text = DumpYaml(j);
  EXPECT_NE(text.find("image: registry:5000/base:1.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("url: http://llm-gateway:8080/a#frag\n"), std::string::npos) << text;
  EXPECT_NE(text.find("time: \"2030-01-01T00:00:00Z\""), std::string::npos) << text;
  EXPECT_NE(text.find("flag: -c\n"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(json: '{"a":"b c","d":[1]}')"), std::string::npos) << text;
  auto back = ParseYaml(text);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(*back, j) << text;
}

TEST(YamlCodec, MultiDocumentStreamSkipsEmptyDocuments) {
  auto docs = ParseYamlDocuments("---\na: 1\n---\n# only a comment\n---\nb: 2\n...\n---\nc: 3\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0]["a"], 1);
  EXPECT_EQ((*docs)[1]["b"], 2);
  EXPECT_EQ((*docs)[2]["c"], 3);
}

TEST(YamlCodec, ErrorsNameLineAndColumn) {
  auto bad = ParseYaml("a: 1\nb: [1, 2\nc: 3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("invalid YAML at line"), std::string::npos) << bad.status();

  auto dup = ParseYaml("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("line 3"), std::string::npos) << dup.status();
  EXPECT_NE(dup.status().message().find("duplicate key \"a\""), std::string::npos);

  auto tag = ParseYaml("a: !custom x\n");
  ASSERT_FALSE(tag.ok());
  EXPECT_NE(tag.status().message().find("unsupported tag"), std::string::npos) << tag.status();

  EXPECT_FALSE(ParseYaml("").ok());
  EXPECT_FALSE(ParseYaml("a: 1\n---\nb: 2\n").ok());
}

TEST(YamlCodec, AliasBombAndDeepNestingFailCleanly) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c) {
    bomb += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c,
                        c, fmt::arg("p", prev));
    prev = c;
  }
  auto r = ParseYaml(bomb);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too many nodes"), std::string::npos) << r.status();

  auto deep = ParseYaml(std::string(5000, '[') + std::string(5000, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper"), std::string::npos) << deep.status();

  auto cyclic = ParseYaml("a: &x [1, *x]\n");
  ASSERT_FALSE(cyclic.ok());
  EXPECT_NE(cyclic.status().message().find("alias refers"), std::string::npos) << cyclic.status();

  auto deep_json = ParseJson(std::string(5000, '[') + std::string(5000, ']'));
  ASSERT_FALSE(deep_json.ok());
  EXPECT_NE(deep_json.status().message().find("nested deeper"), std::string::npos);
}

TEST(JsonCodec, MalformedJsonNamesThePosition) {
  auto r = ParseJson(R"({"a": 1,})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("line 1, column 9"), std::string::npos) << r.status();
  EXPECT_FALSE(ParseJson(R"({"a": 1} trailing)").ok());
}

TEST(JsonCodec, ManifestsAcceptJsonAndYaml) {
  auto j = ParseManifests(R"(  {"kind": "A"})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)[0]["kind"], "A");
  auto arr = ParseManifests(R"([{"kind": "A"}, {"kind": "B"}])");
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->size(), 2u);
  auto y = ParseManifests("# comment\nkind: A\n---\nkind: B\n");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->size(), 2u);
}

TEST(ObjectCodec, WrongMetadataTypesAreNamed) {
  auto r = ObjectFromJsonText(
      R"({"apiVersion": 1, "metadata": {"name": 5, "labels": {"a": 1}, "finalizers": "x",
          "resourceVersion": "abc", "creationTimestamp": "yesterday"}})");
  ASSERT_FALSE(r.ok());
  std::string m = r.status().message();
  EXPECT_NE(m.find("apiVersion: must be a string, got integer"), std::string::npos) << m;
  EXPECT_NE(m.find("metadata.name: must be a string, got integer"), std::string::npos) << m;
  EXPECT_NE(m.find("metadata.labels.a: must be a string"), std::string::npos) << m;
  EXPECT_NE(m.find("metadata.finalizers: must be an array of strings"), std::string::npos) << m;
  EXPECT_NE(m.find("metadata.resourceVersion: must be a positive decimal revision"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("metadata.creationTimestamp: must be an RFC 3339 time"), std::string::npos) << m;

  auto not_object = ObjectFromJsonText("[1]");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("must be a JSON object"), std::string::npos);
}

TEST(ObjectCodec, MetadataRoundTrips) {
  auto r = ObjectFromJsonText(R"({"apiVersion": "warren.dev/v1alpha1", "kind": "Node",
    "metadata": {"name": "n1", "uid": "u", "resourceVersion": "42", "generation": 3,
      "creationTimestamp": "2026-01-02T03:04:05Z", "finalizers": ["a/b"],
      "ownerReferences": [{"apiVersion": "v", "kind": "K", "name": "o", "uid": "x",
                           "controller": true}]}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->metadata.resource_version, 42);
  EXPECT_EQ(r->metadata.generation, 3);
  ASSERT_NE(r->ControllerRef(), nullptr);
  EXPECT_EQ(r->ControllerRef()->name, "o");
  Json j = ObjectToJson(*r);
  EXPECT_EQ(j["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(j["metadata"]["creationTimestamp"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_FALSE(j["metadata"]["ownerReferences"][0].contains("blockOwnerDeletion"));
}

// RFC 7386 appendix A.
TEST(MergePatch, RfcExamples) {
  struct Case {
    const char* target;
    const char* patch;
    const char* result;
  } cases[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    Json target = Json::parse(c.target);
    ApplyMergePatch(target, Json::parse(c.patch));
    EXPECT_EQ(target, Json::parse(c.result)) << c.target << " + " << c.patch;
  }
}

TEST(MergePatch, CreateIsTheInverseOfApply) {
  Json from = Json::parse(R"({"a":1,"b":{"c":2,"d":3},"e":[1]})");
  Json to = Json::parse(R"({"a":1,"b":{"c":5},"e":[2],"f":"new"})");
  Json patch = CreateMergePatch(from, to);
  EXPECT_EQ(patch, Json::parse(R"({"b":{"c":5,"d":null},"e":[2],"f":"new"})"));
  ApplyMergePatch(from, patch);
  EXPECT_EQ(from, to);
}

}  // namespace
}  // namespace warren::api

namespace warren::api {
namespace {

// yaml-cpp 0.7 allocates without bound on a ',' token outside flow collections; such input is
// rejected before it reaches the parser, and valid YAML with commas still parses.
TEST(YamlCodec, CommaWhereANodeStartsIsRejectedNotParsed) {
  for (const char* bad :
       {",", ",,", " ,", "- a\n,", "---\n,", "[a]\n,", "&x ,", "!!str ,", "\"a\"\n,",
        "a: it's\n---\n,", "\"2\", x", "\"a\" , b", "[a],", "!,", "&a,", "\"\"\"x\", y"}) {
    auto r = ParseYamlDocuments(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("unexpected ',' outside a flow collection"),
              std::string::npos)
        << bad << ": " << r.status();
  }
  auto ok = ParseYaml(
      "a: [1, 2, {b: 'x, y'}]\n"
      "s: |\n"
      "  ,starts with a comma inside a block scalar\n"
      "  and [brackets\n"
      "q: \"a, b\"\n"
      "p: one, two # comment, with commas\n"
      "t: 'it''s'\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)["a"][2]["b"], "x, y");
  EXPECT_EQ((*ok)["s"], ",starts with a comma inside a block scalar\nand [brackets\n");
  EXPECT_EQ((*ok)["p"], "one, two");
  EXPECT_EQ((*ok)["t"], "it's");
}

// yaml-cpp 0.7's LoadAll never returns on some streams: each turn starts an empty document at a
// token its parser cannot consume. Fuzzing found these; they must fail fast with a message, and
// streams of many (empty) documents must still parse.
TEST(YamlCodec, StreamWhoseDocumentsStopAdvancingIsRejected) {
  for (const char* bad : {"!: &x [1, \"2\",~]\n\"\"\"\"apieVo\"p:iVe\"p\" &\n? "}) {
    auto r = ParseYamlDocuments(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("invalid YAML at line"), std::string::npos) << r.status();
  }
  std::string many;
  for (int i = 0; i < 200; ++i) many += "---\n";
  many += "a: 1\n---\n...\n---\nb: 2\n";
  auto docs = ParseYamlDocuments(many);
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1]["b"], 2);
}

// yaml-cpp decodes \N and \_ to lone bytes that are not UTF-8; we read them as the characters
// YAML means, and print line-breaking characters escaped so every reader sees one line.
TEST(YamlCodec, EscapedUnicodeCharactersReadAsUtf8AndPrintEscaped) {
  auto doc = ParseYaml("a: \"x\\Ny\\_z\\Lw\\Pv\"\n\"k\\N\": 1\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["a"], "x\u0085y\u00a0z\u2028w\u2029v");
  EXPECT_EQ((*doc)["k\u0085"], 1);
  std::string text = DumpYaml(*doc);
  EXPECT_EQ(text.find("\xc2\x85"), std::string::npos) << text;
  EXPECT_EQ(text.find("\xe2\x80\xa8"), std::string::npos) << text;
  auto again = ParseYaml(text);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
  EXPECT_EQ(*again, *doc) << text;
  EXPECT_EQ(doc->dump(), again->dump());  // both valid UTF-8 (dump throws otherwise)

  // Text that would otherwise print as a literal block or single-quoted is escaped too.
  Json other = {{"block", "a\u0085b\n"}, {"quoted", "say \"x\u2028y\""}};
  std::string printed = DumpYaml(other);
  EXPECT_EQ(printed.find("\xc2\x85"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("\xe2\x80\xa8"), std::string::npos) << printed;
  auto read_back = ParseYaml(printed);
  ASSERT_TRUE(read_back.ok()) << read_back.status();
  EXPECT_EQ(*read_back, other) << printed;
}

// Literal blocks keep exactly one final line break (clip chomping), so text with several, or
// with nothing but line breaks, must print another way to read back the same.
TEST(YamlCodec, TrailingLineBreaksSurviveTheRoundTrip) {
  Json doc = {{"one", "abc\n"},  {"two", "abc\n\n"},  {"three", "x\n\n\n"}, {"only", "\n"},
              {"only2", "\n\n"}, {"lead", "\n\nx\n"}, {"inner", "a\n\nb\n"}};
  std::string text = DumpYaml(doc);
  auto again = ParseYaml(text);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
  EXPECT_EQ(*again, doc) << text;
  EXPECT_NE(text.find("one: |\n  abc\n"), std::string::npos) << text;  // still a literal block
}

}  // namespace
}  // namespace warren::api

namespace warren::api {
namespace {

TEST(StringFieldTest, OnlyAStringIsTakenAnythingElseFallsBack) {
  const Json j = ParseJson(R"({"message":"gone","code":502})").value();
  EXPECT_EQ(StringField(j, "message"), "gone");
  EXPECT_EQ(StringField(j, "code", "none"), "none") << "a number where a string was expected";
  EXPECT_EQ(StringField(j, "missing", "none"), "none");
  EXPECT_EQ(StringField(Json::array(), "message", "x"), "x");
}

}  // namespace
}  // namespace warren::api
