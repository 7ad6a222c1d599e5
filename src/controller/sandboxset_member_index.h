#pragma once

#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "controller/informer.h"
#include "controller/sandboxset_member.h"

namespace warren::controller {

// How many of a set's members stand where, split by the set's current template revision.
struct MemberTally {
  int dead = 0;
  int old_creating = 0, old_available = 0;  // another template hash
  int new_creating = 0, new_available = 0;  // the current one
  // Of the available ones (both hashes), how many are hibernated: claimable, but woken first.
  int hibernated = 0;

  int creating() const { return old_creating + new_creating; }
  int available() const { return old_available + new_available; }
  bool operator==(const MemberTally&) const = default;
};

// The members of every SandboxSet by the set's uid, with counts by state and template hash kept
// as the members change. A claim changes one member; the set's reconcile and status then read
// the counts instead of classifying every member, so their cost does not grow with the pool.
//
// A sandbox is a member while its controller reference is a SandboxSet. Thread-safe.
class SetMemberIndex {
 public:
  // Records `sandbox` under `key` ("ns/name"), replacing what was there: counted under its
  // set, or dropped when it no longer has one.
  void Upsert(const std::string& key, const ObjectPtr& sandbox);
  void Erase(const std::string& key);

  std::vector<ObjectPtr> MembersOf(const std::string& set_uid) const;
  // Counts of the set's members against the current template hash `revision`.
  MemberTally TallyOf(const std::string& set_uid, std::string_view revision) const;

 private:
  static constexpr size_t kStates = 6;  // MemberState values
  static_assert(static_cast<size_t>(MemberState::kTerminating) + 1 == kStates);
  struct Entry {
    std::string set_uid, hash;
    MemberState state;
  };
  struct Set {
    std::unordered_map<std::string, ObjectPtr> members;                 // by key
    std::unordered_map<std::string, std::array<int, kStates>> by_hash;  // hash → per state
  };
  void EraseLocked(const std::string& key);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // by key; guarded by mu_
  std::unordered_map<std::string, Set> sets_;       // by set uid; guarded by mu_
};

}  // namespace warren::controller
