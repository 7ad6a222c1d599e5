#include "api/json_path.h"

#include <gtest/gtest.h>

#include "api/status_object.h"

namespace warren::api {
namespace {

TEST(JsonPath, PrinterColumnPaths) {
  Json doc = Json::parse(R"({
    "metadata": {"labels": {"agents.kruise.io/sandbox-pool": "p1"}},
    "status": {"phase": "Running", "replicas": 3,
               "conditions": [{"type": "Synced", "status": "False"},
                              {"type": "Ready", "status": "True"}]},
    "items": [10, 20]})");
  EXPECT_EQ(JsonPathText(doc, ".status.phase"), "Running");
  EXPECT_EQ(JsonPathText(doc, ".status.replicas"), "3");
  EXPECT_EQ(JsonPathText(doc, R"(.metadata.labels.agents\.kruise\.io/sandbox-pool)"), "p1");
  EXPECT_EQ(JsonPathText(doc, R"(.status.conditions[?(@.type=="Ready")].status)"), "True");
  EXPECT_EQ(JsonPathText(doc, ".items[1]"), "20");
  EXPECT_EQ(JsonPathText(doc, "{.status.phase}"), "Running");
  EXPECT_EQ(JsonPathText(doc, ".status.missing"), "");
  EXPECT_EQ(FindJsonPath(doc, ".items[5]"), nullptr);
  EXPECT_EQ(FindJsonPath(doc, ".status.conditions[?(@.type==\"Gone\")].status"), nullptr);
  EXPECT_EQ(FindJsonPath(doc, ".items[x"), nullptr);
}

TEST(StatusObject, MapsCodesAndReasons) {
  auto e = ToHttpError(InvalidArgumentError("SandboxSet.agents.kruise.io \"p\" is invalid: x"),
                       {"p", "agents.kruise.io", "sandboxsets"});
  EXPECT_EQ(e.code, 422);
  EXPECT_EQ(e.reason, "Invalid");
  EXPECT_EQ(e.status["details"]["kind"], "sandboxsets");
  EXPECT_EQ(ToHttpError(InvalidArgumentError("invalid JSON: x")).code, 400);
  EXPECT_EQ(ToHttpError(AbortedError("x")).reason, "Conflict");
  EXPECT_EQ(ToHttpError(AlreadyExistsError("x")).code, 409);
  EXPECT_EQ(ToHttpError(OutOfRangeError("x")).code, 410);
  EXPECT_EQ(ToHttpError(NotFoundError("x")).code, 404);
  Status back = FromHttpError(409, DumpJson(ToHttpError(AlreadyExistsError("dup")).status));
  EXPECT_EQ(back.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(back.message(), "dup");
  EXPECT_EQ(ReasonOf(DumpJson(e.status)), "Invalid");
  EXPECT_NE(FromHttpError(502, "<html>").message().find("HTTP 502"), std::string::npos);
}

}  // namespace
}  // namespace warren::api
