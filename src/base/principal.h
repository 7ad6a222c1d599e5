#pragma once

#include <string>

namespace warren::base {

// Who made a request: the API key it presented, as the server's authenticator established it.
// A team is a namespace: a team key sees and changes only its team's namespace; an admin key
// sees every namespace (and creates in its own team's). Lives in base so that the HTTP layer
// can carry it on a request (net::Request::principal) and every module above can read it
// without depending on where keys are stored. Value type.
struct Principal {
  std::string key_id;    // 16 hex characters; what `warren apikey rm` takes
  std::string key_name;  // unique per install
  std::string team;      // the namespace the key belongs to
  bool admin = false;

  // Whether this caller may see objects in namespace `ns`.
  bool Sees(std::string_view ns) const { return admin || team == ns; }
};

}  // namespace warren::base
