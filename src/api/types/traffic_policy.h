#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// TrafficPolicy (agents.kruise.io/v1alpha1, tp): egress rules for the Sandboxes its selector
// picks in its namespace (openkruise-agents.md §1.8). Warren enforces them with the same
// nftables rules and domain proxy as E2B's network fields (sbnet/egress_policy.h): an `allow`
// rule's peers join allowOut, a `reject` rule's CIDRs join denyOut, and allow wins.
struct TrafficPortSpec {
  WARREN_API_STRUCT;
  std::string protocol;  // TCP, UDP, ICMP, SCTP
  std::optional<int32_t> port;
  std::optional<int32_t> end_port;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("protocol", s.protocol);
    v("port", s.port);
    v("endPort", s.end_port);
  }
};

// Exactly one of them.
struct TrafficPeerSpec {
  WARREN_API_STRUCT;
  std::string cidr;  // an IPv4 address or CIDR
  std::string fqdn;  // a domain, or *.domain
  RawJson service;
  RawJson workload;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("cidr", s.cidr);
    v("fqdn", s.fqdn);
    v("service", s.service);
    v("workload", s.workload);
  }
};

struct TrafficRuleSpec {
  WARREN_API_STRUCT;
  std::string action;  // allow, reject
  std::vector<TrafficPeerSpec> to;
  std::vector<TrafficPeerSpec> from;
  std::vector<TrafficPortSpec> ports;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("action", s.action);
    v("to", s.to);
    v("from", s.from);
    v("ports", s.ports);
  }
};

struct TrafficRulesSpec {
  WARREN_API_STRUCT;
  std::vector<TrafficRuleSpec> rules;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("rules", s.rules);
  }
};

struct TrafficPolicySpec {
  WARREN_API_STRUCT;
  std::optional<int32_t> priority;            // default 1000; see AdmitTrafficPolicy
  std::optional<LabelSelectorSpec> selector;  // empty: every Sandbox of the namespace
  std::optional<TrafficRulesSpec> ingress;
  std::optional<TrafficRulesSpec> egress;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("priority", s.priority);
    v("selector", s.selector);
    v("ingress", s.ingress);
    v("egress", s.egress);
  }
};

struct TrafficPolicyStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;  // Accepted
  int32_t sandboxes = 0;              // Sandboxes it selects now

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("conditions", s.conditions);
    v("sandboxes", s.sandboxes);
  }
};

}  // namespace warren::api
