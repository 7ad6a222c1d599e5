#include "gateway/tls_certificate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <memory>

#include "base/ids.h"
#include "base/small_file.h"
#include "base/unique_fd.h"

namespace warren::gateway {
namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using Name = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
using Extension = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

constexpr long kDay = 24 * 3600;
constexpr long kCaLifetime = 3650 * kDay;
constexpr long kLeafLifetime = 397 * kDay;  // what public CAs may issue at most
constexpr long kRenewBefore = 30 * kDay;

// The reason OpenSSL gave for its last failure, for an error message.
std::string OpensslReason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no reason given";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

Status OpensslError(std::string_view what) {
  return InternalError(fmt::format("{}: {}", what, OpensslReason()));
}

Result<std::string> Pem(auto write, auto* object) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get(), object) != 1) return OpensslError("encode PEM");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  return Pem(
      [](BIO* b, EVP_PKEY* k) {
        return PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
      },
      key);
}

Result<std::string> CertPem(X509* cert) {
  return Pem([](BIO* b, X509* c) { return PEM_write_bio_X509(b, c); }, cert);
}

Result<Cert> ReadCert(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path));
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return InvalidArgumentError(
        fmt::format("{}: not a PEM certificate ({})", path, OpensslReason()));
  }
  return cert;
}

Result<Key> ReadKey(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path));
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return InvalidArgumentError(
        fmt::format("{}: not an unencrypted PEM private key ({})", path, OpensslReason()));
  }
  return key;
}

// Writes `data` to `path` through a temporary file and a rename, with `mode`.
Status WriteFile(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  base::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) return ErrnoError(fmt::format("create {}", tmp), errno);
  if (write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size()) ||
      fsync(fd.get()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("write {}", tmp), err);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("rename {} to {}", tmp, path), err);
  }
  return Status::Ok();
}

Result<Key> NewKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpensslError("generate a P-256 key");
  return key;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Extension ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpensslError(fmt::format("certificate extension {}={}", OBJ_nid2sn(nid), value));
  }
  return Status::Ok();
}

// A certificate for `key`, named `common_name`, valid from an hour ago (clocks differ) for
// `lifetime` seconds, issued by `issuer` (itself when null); the caller adds its extensions and
// signs it.
Result<Cert> NewCert(EVP_PKEY* key, std::string_view common_name, long lifetime, X509* issuer) {
  Cert cert(X509_new());
  if (!cert) return OpensslError("allocate a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  base::RandomBytes(serial, sizeof(serial));
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  bool serial_set = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  if (!serial_set) return OpensslError("certificate serial number");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), lifetime);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  std::string cn(common_name);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Warren"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* issuer_cert = issuer ? issuer : cert.get();
  RETURN_IF_ERROR(AddExtension(cert.get(), issuer_cert, NID_subject_key_identifier, "hash"));
  if (issuer) {
    RETURN_IF_ERROR(
        AddExtension(cert.get(), issuer_cert, NID_authority_key_identifier, "keyid:always"));
  }
  return cert;
}

Status Sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) <= 0) return OpensslError("sign the certificate");
  return Status::Ok();
}

bool ValidFor(X509* cert, long seconds_from_now) {
  time_t then = time(nullptr) + seconds_from_now;
  return X509_cmp_time(X509_get0_notAfter(cert), &then) > 0 &&
         X509_cmp_current_time(X509_get0_notBefore(cert)) < 0;
}

// What a host under the domain looks like, for X509_check_host.
std::string SampleHost(std::string_view domain) { return fmt::format("49983-x.{}", domain); }

struct Ca {
  Cert cert;
  Key key;
  bool created = false;
};

Result<Ca> LoadOrCreateCa(const std::string& dir) {
  std::string cert_path = dir + "/ca.crt";
  std::string key_path = dir + "/ca.key";
  auto cert = ReadCert(cert_path);
  if (cert.ok()) {
    ASSIGN_OR_RETURN(Key key, ReadKey(key_path));
    if (X509_check_private_key(cert->get(), key.get()) != 1) {
      return DataLossError(fmt::format("{} is not the key of {}", key_path, cert_path));
    }
    if (!ValidFor(cert->get(), kLeafLifetime)) {
      return FailedPreconditionError(fmt::format(
          "{}: Warren's CA ends within {} days; move {} and {} away to make a new one (clients "
          "must then trust the new ca.crt)",
          cert_path, kLeafLifetime / kDay, cert_path, key_path));
    }
    return Ca{std::move(cert).value(), std::move(key), false};
  }
  if (cert.status().code() != StatusCode::kNotFound) return cert.status();
  ASSIGN_OR_RETURN(Key key, NewKey());
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  ASSIGN_OR_RETURN(Cert made,
                   NewCert(key.get(), fmt::format("Warren CA on {}", host), kCaLifetime, nullptr));
  RETURN_IF_ERROR(
      AddExtension(made.get(), made.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  RETURN_IF_ERROR(
      AddExtension(made.get(), made.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  RETURN_IF_ERROR(Sign(made.get(), key.get()));
  ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  ASSIGN_OR_RETURN(std::string cert_pem, CertPem(made.get()));
  // The key first: a certificate on disk without its key would be taken for a whole CA.
  RETURN_IF_ERROR(WriteFile(key_path, key_pem, 0600));
  RETURN_IF_ERROR(WriteFile(cert_path, cert_pem, 0644));
  return Ca{std::move(made), std::move(key), true};
}

// Whether the leaf in `dir` serves `domain`, was signed by `ca` and lasts a while yet.
bool LeafUsable(const std::string& dir, std::string_view domain, const Ca& ca) {
  auto cert = ReadCert(dir + "/gateway.crt");
  auto key = ReadKey(dir + "/gateway.key");
  if (!cert.ok() || !key.ok()) return false;
  std::string host = SampleHost(domain);
  EVP_PKEY* ca_public = X509_get0_pubkey(ca.cert.get());
  return X509_check_private_key(cert->get(), key->get()) == 1 &&
         X509_check_host(cert->get(), host.data(), host.size(), 0, nullptr) == 1 &&
         X509_check_host(cert->get(), domain.data(), domain.size(), 0, nullptr) == 1 &&
         ca_public != nullptr && X509_verify(cert->get(), ca_public) == 1 &&
         ValidFor(cert->get(), kRenewBefore);
}

Status IssueLeaf(const std::string& dir, std::string_view domain, const Ca& ca) {
  ASSIGN_OR_RETURN(Key key, NewKey());
  ASSIGN_OR_RETURN(Cert leaf,
                   NewCert(key.get(), fmt::format("*.{}", domain), kLeafLifetime, ca.cert.get()));
  RETURN_IF_ERROR(
      AddExtension(leaf.get(), ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  RETURN_IF_ERROR(
      AddExtension(leaf.get(), ca.cert.get(), NID_key_usage, "critical,digitalSignature"));
  RETURN_IF_ERROR(AddExtension(leaf.get(), ca.cert.get(), NID_ext_key_usage, "serverAuth"));
  std::string san = fmt::format("DNS:*.{},DNS:{}", domain, domain);
  RETURN_IF_ERROR(AddExtension(leaf.get(), ca.cert.get(), NID_subject_alt_name, san.c_str()));
  RETURN_IF_ERROR(Sign(leaf.get(), ca.key.get()));
  ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  ASSIGN_OR_RETURN(std::string leaf_pem, CertPem(leaf.get()));
  ASSIGN_OR_RETURN(std::string ca_pem, CertPem(ca.cert.get()));
  RETURN_IF_ERROR(WriteFile(dir + "/gateway.key", key_pem, 0600));
  return WriteFile(dir + "/gateway.crt", leaf_pem + ca_pem, 0644);
}

}  // namespace

Status CheckSandboxDomain(std::string_view domain) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("--domain \"{}\": {}", domain, why));
  };
  if (domain.empty()) return bad("is empty");
  if (domain.size() > 253) return bad("is longer than 253 characters");
  size_t labels = 0;
  size_t start = 0;
  while (start <= domain.size()) {
    size_t dot = domain.find('.', start);
    std::string_view label =
        domain.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63) return bad("has an empty or over-long label");
    for (char c : label) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) return bad("may hold letters, digits, '-' and '.' only");
    }
    if (label.front() == '-' || label.back() == '-')
      return bad("has a label that starts or ends with '-'");
    ++labels;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (labels < 2) {
    return bad("needs at least two labels (clients refuse a certificate for *.<top-level domain>)");
  }
  return Status::Ok();
}

Result<TlsFiles> EnsureWarrenCertificate(const std::string& dir, std::string_view domain) {
  RETURN_IF_ERROR(CheckSandboxDomain(domain));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("create {}", dir), errno);
  }
  ASSIGN_OR_RETURN(Ca ca, LoadOrCreateCa(dir));
  if (!LeafUsable(dir, domain, ca)) RETURN_IF_ERROR(IssueLeaf(dir, domain, ca));
  return TlsFiles{.certificate_chain = dir + "/gateway.crt",
                  .private_key = dir + "/gateway.key",
                  .ca = dir + "/ca.crt",
                  .ca_created = ca.created};
}

Result<TlsFiles> CheckOperatorCertificate(const std::string& certificate_chain,
                                          const std::string& private_key, std::string_view domain) {
  RETURN_IF_ERROR(CheckSandboxDomain(domain));
  auto cert = ReadCert(certificate_chain);
  if (!cert.ok()) return cert.status().WithPrefix("--tls-cert");
  auto key = ReadKey(private_key);
  if (!key.ok()) return key.status().WithPrefix("--tls-key");
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    return InvalidArgumentError(fmt::format("--tls-key {} is not the key of --tls-cert {}",
                                            private_key, certificate_chain));
  }
  if (!ValidFor(cert->get(), 0)) {
    return InvalidArgumentError(fmt::format(
        "--tls-cert {} is not valid now (expired or not yet valid)", certificate_chain));
  }
  std::string host = SampleHost(domain);
  if (X509_check_host(cert->get(), host.data(), host.size(), 0, nullptr) != 1) {
    return InvalidArgumentError(
        fmt::format("--tls-cert {} does not name *.{}: sandbox hosts ({}) would fail verification",
                    certificate_chain, domain, host));
  }
  return TlsFiles{.certificate_chain = certificate_chain, .private_key = private_key};
}

}  // namespace warren::gateway
