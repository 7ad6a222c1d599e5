#include "sbnet/sniff.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <memory>

namespace warren::sbnet {
namespace {

// The first flight of a real TLS client (OpenSSL's, TLS 1.3 with 1.2 fallback), naming
// `server_name` unless it is empty.
std::string ClientHello(const std::string& server_name) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);  // owned by ssl from here
  if (!server_name.empty()) SSL_set_tlsext_host_name(ssl.get(), server_name.c_str());
  EXPECT_EQ(SSL_connect(ssl.get()), -1);  // wants the server's answer
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  return std::string(data, static_cast<size_t>(n));
}

TEST(SniffTest, TheServerNameOfARealClientHelloIsFoundOnceItsRecordIsIn) {
  std::string hello = ClientHello("Files.PyPI.org");
  ASSERT_GT(hello.size(), 100u);
  for (size_t cut : {size_t{0}, size_t{3}, size_t{5}, hello.size() / 2, hello.size() - 1}) {
    EXPECT_FALSE(SniffTlsServerName(hello.substr(0, cut)).complete) << cut;
  }
  Sniffed s = SniffTlsServerName(hello);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.host, "files.pypi.org");
  // Without SNI: complete, no name (addresses decide).
  Sniffed none = SniffTlsServerName(ClientHello(""));
  EXPECT_TRUE(none.complete);
  EXPECT_EQ(none.host, "");
}

TEST(SniffTest, BytesThatAreNotTlsAreJudgedAtOnceWithoutAName) {
  EXPECT_TRUE(SniffTlsServerName("GET / HTTP/1.1\r\n").complete);
  EXPECT_EQ(SniffTlsServerName("GET / HTTP/1.1\r\n").host, "");
  std::string hello = ClientHello("example.com");
  hello[5] = 2;  // a ServerHello where a ClientHello belongs
  EXPECT_EQ(SniffTlsServerName(hello).host, "");
  // A record whose length runs past what its hello claims: only what is inside counts.
  std::string truncated = ClientHello("example.com");
  truncated[8] = 0;  // the hello's length says 0 bytes
  EXPECT_EQ(SniffTlsServerName(truncated).host, "");
}

TEST(SniffTest, TheHttpHostIsReadFromACompleteRequestHead) {
  EXPECT_FALSE(SniffHttpHost("GET / HTTP/1.1\r\nHost: example.com\r\n").complete);
  Sniffed s = SniffHttpHost("GET / HTTP/1.1\r\nUser-Agent: x\r\nhOsT:  Example.COM:8080 \r\n\r\n");
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.host, "example.com");
  EXPECT_EQ(SniffHttpHost("GET / HTTP/1.0\r\n\r\n").host, "");
  EXPECT_EQ(SniffHttpHost("GET / HTTP/1.1\r\nHost: a b\r\n\r\n").host, "") << "not a name";
  EXPECT_TRUE(SniffHttpHost("\x16\x03\x01").complete) << "TLS on port 80 is not HTTP";
  EXPECT_EQ(SniffHttpHost("\x16\x03\x01").host, "");
}

}  // namespace
}  // namespace warren::sbnet
