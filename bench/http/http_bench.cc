// Requests/s and latency of our HTTP server against nginx on loopback, with the same wrk
// settings in the same run, plus the gateway-shaped figures: Responder::Proxy relaying to an
// upstream against nginx proxy_pass to the same upstream, with a new upstream connection per
// request and with upstream keep-alive (ProxyOptions::pool_key against nginx's
// `upstream { keepalive }`). See README.md for the full-size command and the figures it printed.
//
//   http_bench [--smoke] [--threads N] [--connections N] [--duration S] [--rounds N]
//              [--loops N]
//   http_bench --serve PORT [--duration S]   only our hello server, for profiling by hand

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/scope_guard.h"
#include "base/strings.h"
#include "base/testing/free_port.h"
#include "base/unique_fd.h"
#include "net/dial.h"
#include "net/http_server.h"
#include "os/spawn.h"

namespace warren {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kBody = "Hello, World!";

struct Settings {
  bool smoke = false;
  int threads = 2;
  int connections = 64;
  int duration_s = 5;
  int loops = 0;  // 0 = one per core
  int rounds = 3;
  int serve_port = -1;  // --serve: only run our hello server there (for perf/strace by hand)
};

struct Figures {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  uint64_t requests = 0;
  uint64_t bad = 0;  // non-2xx responses and socket errors
};

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "http_bench: %s\n", why.c_str());
  std::exit(1);
}

Result<std::string> ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", errno);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

int Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// "1.23ms" → 1.23; "850.00us" → 0.85; "1.02s" → 1020.
double ParseMs(std::string_view s) {
  double scale = 1;
  if (s.ends_with("us")) {
    scale = 0.001;
    s.remove_suffix(2);
  } else if (s.ends_with("ms")) {
    s.remove_suffix(2);
  } else if (s.ends_with("s")) {
    scale = 1000;
    s.remove_suffix(1);
  }
  return std::strtod(std::string(s).c_str(), nullptr) * scale;
}

Figures RunWrk(const Settings& settings, uint16_t port, int duration_s) {
  os::SpawnOptions spawn;
  spawn.argv = {"wrk",
                "-t",
                std::to_string(settings.threads),
                "-c",
                std::to_string(settings.connections),
                "-d",
                std::to_string(duration_s) + "s",
                "--latency",
                "http://127.0.0.1:" + std::to_string(port) + "/"};
  spawn.env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  spawn.stdin_pipe = false;
  auto child = os::Spawn(spawn);
  if (!child.ok()) Die("wrk: " + child.status().ToString());
  auto out = ReadAll(child->stdout_r.get());
  int status = Wait(child->pid);
  if (!out.ok() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("wrk failed: " + out.value_or(""));
  }
  Figures f;
  for (std::string_view line : base::Split(*out, '\n')) {
    line = base::TrimSpace(line);
    auto fields = base::SplitNonEmpty(line, ' ');
    if (line.starts_with("Requests/sec:") && fields.size() >= 2) {
      f.rps = std::strtod(std::string(fields[1]).c_str(), nullptr);
    } else if (line.starts_with("50%") && fields.size() >= 2) {
      f.p50_ms = ParseMs(fields[1]);
    } else if (line.starts_with("99%") && fields.size() >= 2) {
      f.p99_ms = ParseMs(fields[1]);
    } else if (line.find("requests in") != std::string_view::npos && !fields.empty()) {
      f.requests = std::strtoull(std::string(fields[0]).c_str(), nullptr, 10);
    } else if (line.starts_with("Non-2xx or 3xx responses:") && !fields.empty()) {
      f.bad += std::strtoull(std::string(fields.back()).c_str(), nullptr, 10);
    } else if (line.starts_with("Socket errors:")) {
      // "Socket errors: connect 0, read 0, write 0, timeout 0"
      for (size_t i = 2; i + 1 < fields.size(); i += 2) {
        f.bad += std::strtoull(std::string(fields[i + 1]).c_str(), nullptr, 10);
      }
    }
  }
  if (f.requests == 0) Die("wrk reported no requests:\n" + *out);
  return f;
}

// nginx with a private config: one server returns the body, one proxy_passes to it with a new
// connection per request, one over an upstream keep-alive pool.
class Nginx {
 public:
  Nginx(const std::filesystem::path& dir, int workers, uint16_t static_port, uint16_t proxy_port,
        uint16_t keepalive_proxy_port) {
    std::filesystem::path conf = dir / "nginx.conf";
    std::ofstream out(conf);
    out << "worker_processes " << workers << ";\n"
        << "daemon off;\n"
        << "pid " << (dir / "nginx.pid").string() << ";\n"
        << "error_log " << (dir / "error.log").string() << " warn;\n"
        << (::geteuid() == 0 ? "user root;\n" : "") << "events { worker_connections 4096; }\n"
        << "http {\n"
        << "  access_log off;\n"
        << "  keepalive_requests 1000000;\n"
        << "  client_body_temp_path " << (dir / "body").string() << ";\n"
        << "  proxy_temp_path " << (dir / "proxy").string() << ";\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << static_port << ";\n"
        << "    location / { default_type text/plain; return 200 \"" << kBody << "\"; }\n"
        << "  }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << proxy_port << ";\n"
        << "    location / { proxy_pass http://127.0.0.1:" << static_port << "; }\n"
        << "  }\n"
        << "  upstream hello { server 127.0.0.1:" << static_port << "; keepalive 128; }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << keepalive_proxy_port << ";\n"
        << "    location / {\n"
        << "      proxy_pass http://hello;\n"
        << "      proxy_http_version 1.1;\n"
        << "      proxy_set_header Connection \"\";\n"
        << "    }\n"
        << "  }\n"
        << "}\n";
    out.close();
    os::SpawnOptions spawn;
    spawn.argv = {
        "nginx", "-p", dir.string(), "-c", conf.string(), "-e", (dir / "error.log").string()};
    spawn.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
    spawn.stdin_pipe = false;
    auto child = os::Spawn(spawn);
    if (!child.ok()) Die("nginx: " + child.status().ToString());
    pid_ = child->pid;
    for (uint16_t port : {static_port, proxy_port, keepalive_proxy_port}) {
      bool up = false;
      for (int i = 0; i < 200 && !up; ++i) {
        up = net::DialTcp("127.0.0.1", port, 100ms).ok();
        if (!up) std::this_thread::sleep_for(20ms);
      }
      if (!up) {
        std::ifstream log(dir / "error.log");
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        Die("nginx did not start listening on " + std::to_string(port) + ":\n" + text);
      }
    }
  }

  // Stops the master we started (by its pid); it stops its workers.
  ~Nginx() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGQUIT);
    for (int i = 0; i < 100; ++i) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(50ms);
    }
    ::kill(pid_, SIGKILL);
    Wait(pid_);
  }

 private:
  pid_t pid_ = -1;
};

// The round with the median throughput (its latencies come with it); errors of every round.
Figures Median(std::vector<Figures> runs) {
  uint64_t bad = 0;
  for (const Figures& f : runs) bad += f.bad;
  std::sort(runs.begin(), runs.end(),
            [](const Figures& a, const Figures& b) { return a.rps < b.rps; });
  Figures m = runs[runs.size() / 2];
  m.bad = bad;
  return m;
}

void Print(std::string_view name, const Figures& f) {
  std::printf("  %-34s %10.0f req/s   p50 %7.3f ms   p99 %7.3f ms%s\n", std::string(name).c_str(),
              f.rps, f.p50_ms, f.p99_ms, f.bad ? "   (ERRORS: see below)" : "");
}

int Main(int argc, char** argv) {
  Settings s;
  CLI::App app{"http_bench: our HTTP server and proxy beside nginx, both driven by wrk"};
  app.add_flag("--smoke", s.smoke, "a seconds-long pass that only keeps the bench working");
  app.add_option("--threads", s.threads, "wrk threads")->check(CLI::Range(1, 1024));
  app.add_option("--connections", s.connections, "wrk connections")->check(CLI::Range(1, 100000));
  app.add_option("--duration", s.duration_s, "seconds per measurement")
      ->check(CLI::Range(1, 86400));
  app.add_option("--rounds", s.rounds, "measurements of each target")->check(CLI::Range(1, 1000));
  app.add_option("--loops", s.loops, "server loop threads and nginx workers (0: one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--serve", s.serve_port, "only run our hello server on this port")
      ->check(CLI::Range(1, 65535));
  CLI11_PARSE(app, argc, argv);
  if (s.smoke) {
    s.threads = 1;
    s.connections = 8;
    s.duration_s = 1;
    s.rounds = 1;
  }
  base::SetLogLevel("warn");
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  int loops = s.loops > 0 ? s.loops : cores;

  char tmpl[] = "/tmp/warren-http-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) Die("mkdtemp failed");
  std::filesystem::path dir(tmpl);
  auto cleanup = base::ScopeExit([&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });

  net::Router hello;
  hello.Add("GET", "/", [](net::Request&&, net::Responder r) {
    r.Send(net::Response::Text(200, std::string(kBody)));
  });
  uint16_t our_port = s.serve_port > 0 ? static_cast<uint16_t>(s.serve_port) : 0;
  auto ours = net::HttpServer::Start({.port = our_port, .loop_threads = loops}, std::move(hello));
  if (!ours.ok()) Die(ours.status().ToString());
  if (s.serve_port >= 0) {
    std::printf("http_bench: serving GET / on 127.0.0.1:%u for %d s\n", (*ours)->port(),
                s.duration_s);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(s.duration_s));
    return 0;
  }

  uint16_t nginx_static = base::testing::FreeLoopbackPort();
  uint16_t nginx_proxy = base::testing::FreeLoopbackPort();
  uint16_t nginx_keepalive = base::testing::FreeLoopbackPort();
  Nginx nginx(dir, cores, nginx_static, nginx_proxy, nginx_keepalive);

  // The gateway's shape: an inline handler dials the upstream and hands the exchange to Proxy.
  net::Router gateway;
  gateway.SetFallback(
      [nginx_static](net::Request&&, net::Responder r) {
        auto fd = net::DialTcp("127.0.0.1", nginx_static, 2s);
        if (!fd.ok()) {
          r.Send(net::Response::Text(502, fd.status().ToString()));
          return;
        }
        r.Proxy(std::move(*fd), {});
      },
      net::RouteOptions{.stream_body = true});
  auto proxy = net::HttpServer::Start({.loop_threads = loops}, std::move(gateway));
  if (!proxy.ok()) Die(proxy.status().ToString());

  // The gateway's keep-alive shape: an idle connection of this loop when there is one (no
  // dial, one poll(2) beside the relay's own reads and writes), else a new one, pooled after
  // the response.
  net::Router pooled;
  pooled.SetFallback(
      [nginx_static](net::Request&&, net::Responder r) {
        const net::UpstreamKey key{.group = "hello", .target = nginx_static};
        net::ProxyOptions options;
        options.pool_key = key;
        options.pool_idle_timeout = 10s;
        if (r.ProxyPooled(key, options)) return;
        auto fd = net::DialTcp("127.0.0.1", nginx_static, 2s);
        if (!fd.ok()) {
          r.Send(net::Response::Text(502, fd.status().ToString()));
          return;
        }
        r.Proxy(std::move(*fd), std::move(options));
      },
      net::RouteOptions{.stream_body = true});
  auto pooled_proxy = net::HttpServer::Start({.loop_threads = loops}, std::move(pooled));
  if (!pooled_proxy.ok()) Die(pooled_proxy.status().ToString());

  std::printf(
      "http_bench: wrk -t%d -c%d -d%ds, median of %d rounds, %d cores, our loops=%d, nginx "
      "workers=%d%s\n",
      s.threads, s.connections, s.duration_s, s.rounds, cores, loops, cores,
      s.smoke ? " (smoke run: figures mean nothing)" : "");
  // Other work on the machine comes and goes: run the six targets in turn, several rounds,
  // and report each one's median round, so a burst of load hits both sides alike.
  if (!s.smoke) {  // warm both up once
    RunWrk(s, nginx_static, 1);
    RunWrk(s, (*ours)->port(), 1);
  }
  std::vector<uint16_t> ports = {nginx_static,     (*ours)->port(), nginx_proxy,
                                 (*proxy)->port(), nginx_keepalive, (*pooled_proxy)->port()};
  std::vector<std::vector<Figures>> rounds(ports.size());
  for (int round = 0; round < s.rounds; ++round) {
    for (size_t i = 0; i < ports.size(); ++i) {
      rounds[i].push_back(RunWrk(s, ports[i], s.duration_s));
    }
  }
  Figures nginx_fixed = Median(rounds[0]);
  Figures warren_fixed = Median(rounds[1]);
  Figures nginx_proxied = Median(rounds[2]);
  Figures warren_proxied = Median(rounds[3]);
  Figures nginx_keepalive_proxied = Median(rounds[4]);
  Figures warren_pooled_proxied = Median(rounds[5]);

  std::printf("fixed body (%zu bytes):\n", kBody.size());
  Print("nginx return 200", nginx_fixed);
  Print("warren HttpServer", warren_fixed);
  std::printf("  ratio warren/nginx: %.2f (target >= 0.80)\n", warren_fixed.rps / nginx_fixed.rps);
  std::printf("through a proxy to nginx (new upstream connection per request):\n");
  Print("nginx proxy_pass", nginx_proxied);
  Print("warren Responder::Proxy", warren_proxied);
  std::printf("  ratio warren/nginx: %.2f\n", warren_proxied.rps / nginx_proxied.rps);
  std::printf("through a proxy to nginx, upstream keep-alive:\n");
  Print("nginx proxy_pass + keepalive", nginx_keepalive_proxied);
  Print("warren Proxy + pool_key", warren_pooled_proxied);
  std::printf("  ratio warren/nginx: %.2f (target >= 0.80)\n",
              warren_pooled_proxied.rps / nginx_keepalive_proxied.rps);

  uint64_t bad = nginx_fixed.bad + warren_fixed.bad + nginx_proxied.bad + warren_proxied.bad +
                 nginx_keepalive_proxied.bad + warren_pooled_proxied.bad;
  if (bad > 0) {
    std::printf(
        "errors: nginx %llu, warren %llu, nginx proxy %llu, warren proxy %llu, nginx keep-alive "
        "proxy %llu, warren pooled proxy %llu\n",
        static_cast<unsigned long long>(nginx_fixed.bad),
        static_cast<unsigned long long>(warren_fixed.bad),
        static_cast<unsigned long long>(nginx_proxied.bad),
        static_cast<unsigned long long>(warren_proxied.bad),
        static_cast<unsigned long long>(nginx_keepalive_proxied.bad),
        static_cast<unsigned long long>(warren_pooled_proxied.bad));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace warren

int main(int argc, char** argv) { return warren::Main(argc, argv); }
