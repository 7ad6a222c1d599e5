#include <gtest/gtest.h>

#include "api/field_selector.h"
#include "api/label_selector.h"
#include "api/object_codec.h"

namespace warren::api {
namespace {

using Labels = std::map<std::string, std::string>;

bool Match(std::string_view selector, const Labels& labels) {
  auto s = LabelSelector::Parse(selector);
  EXPECT_TRUE(s.ok()) << selector << ": " << s.status();
  return s.ok() && s->Matches(labels);
}

TEST(LabelSelector, FullKubernetesSyntax) {
  Labels l = {
      {"app", "web"}, {"tier", "front"}, {"agents.kruise.io/sandbox-claimed", "false"}, {"n", "5"}};
  EXPECT_TRUE(Match("", l));
  EXPECT_TRUE(Match("app=web", l));
  EXPECT_TRUE(Match("app==web", l));
  EXPECT_FALSE(Match("app=db", l));
  EXPECT_TRUE(Match("app!=db", l));
  EXPECT_TRUE(Match("missing!=x", l));  // != matches when the label is absent
  EXPECT_TRUE(Match("app in (db, web)", l));
  EXPECT_FALSE(Match("app in (db)", l));
  EXPECT_TRUE(Match("app notin (db,api)", l));
  EXPECT_TRUE(Match("missing notin (x)", l));
  EXPECT_FALSE(Match("app notin (web)", l));
  EXPECT_TRUE(Match("app", l));
  EXPECT_FALSE(Match("missing", l));
  EXPECT_TRUE(Match("!missing", l));
  EXPECT_FALSE(Match("!app", l));
  EXPECT_TRUE(Match("n>4,n<6", l));
  EXPECT_FALSE(Match("n>5", l));
  EXPECT_TRUE(Match(" app = web , tier in (front) ,agents.kruise.io/sandbox-claimed=false", l));
  EXPECT_FALSE(Match("app=web,tier=back", l));  // comma is AND
  EXPECT_TRUE(Match("empty=", {{"empty", ""}}));
  EXPECT_FALSE(Match("empty=", l));
}

TEST(LabelSelector, BadSyntaxGivesClearErrors) {
  struct Case {
    const char* selector;
    const char* message_part;
  } cases[] = {
      {"a in (x", "expected ')' or ','"},
      {"a in ()", "values can't be empty"},
      {"a in x", "expected '('"},
      {"a b", "expected an operator"},
      {"a=b=c", "expected ',' or end of input"},
      {"=b", "expected a label key"},
      {"!", "expected a label key after '!'"},
      {"a=b,", "expected a label key"},
      {"-bad=x", "key at column 1"},
      {"a=not valid", "expected ',' or end of input"},
      {"a=-x", "value at column 3"},
      {"a>x", "expected an integer value"},
      {"a in (x,)", "empty value in a set"},
      {"a notin (,x)", "empty value in a set"},
  };
  for (const auto& c : cases) {
    auto s = LabelSelector::Parse(c.selector);
    ASSERT_FALSE(s.ok()) << c.selector;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.message_part), std::string::npos)
        << c.selector << " → " << s.status();
    EXPECT_NE(s.status().message().find(c.selector), std::string::npos) << s.status();
  }
}

TEST(LabelSelector, StringFormParsesBackToTheSameSelector) {
  for (const char* text : {"a=b,c!=d,e in (x,y),f notin (z),g,!h,i>3", "x.io/k=v"}) {
    auto s = LabelSelector::Parse(text);
    ASSERT_TRUE(s.ok()) << s.status();
    auto again = LabelSelector::Parse(s->ToString());
    ASSERT_TRUE(again.ok()) << s->ToString();
    EXPECT_EQ(*s, *again) << s->ToString();
  }
}

TEST(LabelSelector, MatchLabelsAndExpressions) {
  auto s = LabelSelector::FromParts({{"app", "web"}},
                                    {{"tier", "In", {"a", "b"}}, {"legacy", "DoesNotExist", {}}},
                                    "spec.selector");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches({{"app", "web"}, {"tier", "b"}}));
  EXPECT_FALSE(s->Matches({{"app", "web"}, {"tier", "c"}}));
  EXPECT_FALSE(s->Matches({{"app", "web"}, {"tier", "a"}, {"legacy", "1"}}));

  auto bad = LabelSelector::FromParts({}, {{"k", "Near", {}}, {"j", "In", {}}}, "spec.selector");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.selector.matchExpressions[0].operator: "
                                        "Unsupported value: \"Near\""),
            std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("spec.selector.matchExpressions[1].values: must be "
                                        "specified"),
            std::string::npos)
      << bad.status();
}

TEST(FieldSelector, NameNamespaceAndStatusFields) {
  auto obj = ObjectFromJsonText(R"({"metadata": {"name": "a", "namespace": "ns"},
                                    "status": {"phase": "Running", "n": 3, "ok": true}})");
  ASSERT_TRUE(obj.ok());
  auto match = [&](const char* text) {
    auto s = FieldSelector::Parse(text);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() && s->Matches(*obj);
  };
  EXPECT_TRUE(match("metadata.name=a"));
  EXPECT_TRUE(match("metadata.name==a,metadata.namespace=ns"));
  EXPECT_FALSE(match("metadata.name!=a"));
  EXPECT_TRUE(match("status.phase=Running"));
  EXPECT_TRUE(match("status.n=3,status.ok=true"));
  EXPECT_TRUE(match("status.missing="));
  EXPECT_TRUE(match(""));

  auto bad = FieldSelector::Parse("spec.replicas");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not of the form field=value"), std::string::npos);
  auto unsupported = FieldSelector::Parse("metadata.labels=x");
  EXPECT_TRUE(FieldSelector::Parse("involvedObject.name=x").ok());
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(unsupported.status().message().find("field label not supported: \"metadata.labels\""),
            std::string::npos)
      << unsupported.status();
  // Field paths are dotted names: anything else could not be printed back unambiguously.
  for (const char* odd : {"spec.a b=x", "spec.a\\=b=x", "status.(x)=y"}) {
    auto r = FieldSelector::Parse(odd);
    ASSERT_FALSE(r.ok()) << odd;
    EXPECT_NE(r.status().message().find("field label not supported"), std::string::npos)
        << odd << ": " << r.status();
  }
}

TEST(FieldSelector, EscapedValues) {
  auto s = FieldSelector::Parse(R"(metadata.name=a\,b)");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->requirements().size(), 1u);
  EXPECT_EQ(s->requirements()[0].value, "a,b");
  auto again = FieldSelector::Parse(s->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->requirements()[0].value, "a,b");
}

}  // namespace
}  // namespace warren::api
