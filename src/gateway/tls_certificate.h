#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::gateway {

// The files a TLS listener for `*.<domain>` serves from.
struct TlsFiles {
  std::string certificate_chain;  // PEM: the leaf, then what signed it
  std::string private_key;        // PEM, mode 0600
  // The CA clients must trust (PEM), when Warren made it; empty for an operator's certificate.
  std::string ca;
  bool ca_created = false;  // made by this call: the first run in this directory
};

// Warren's own certificate authority in `dir` (ca.crt, ca.key: made once, kept for ten years)
// and a certificate for `*.<domain>` and `<domain>` it signed (gateway.crt, gateway.key). The
// leaf is issued again when missing, made for another domain or by another CA, or within 30
// days of its end, so a restart is all renewal needs. Clients trust ca.crt once
// (NODE_EXTRA_CA_CERTS, the system store).
Result<TlsFiles> EnsureWarrenCertificate(const std::string& dir, std::string_view domain);

// Checks an operator's certificate and key before serving them: both readable PEM, the key
// the certificate's, the certificate valid now and for `*.<domain>`.
Result<TlsFiles> CheckOperatorCertificate(const std::string& certificate_chain,
                                          const std::string& private_key, std::string_view domain);

// Whether `domain` can carry sandbox hosts under a wildcard certificate: DNS labels (letters,
// digits, '-'), at least two of them (clients refuse `*.tld`), 253 characters at most.
Status CheckSandboxDomain(std::string_view domain);

}  // namespace warren::gateway
