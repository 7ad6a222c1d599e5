#include "sbnet/address_pool.h"

#include <gtest/gtest.h>

namespace warren::sbnet {
namespace {

TEST(AddressPoolTest, EveryAddressButNetworkGatewayAndBroadcastRoundRobin) {
  auto pool = AddressPool::Create(*os::ParseIpv4Prefix("10.9.0.77/29"));
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(os::FormatIpv4(pool->gateway()), "10.9.0.73");
  std::vector<std::string> got;
  for (int i = 0; i < 5; ++i) got.push_back(os::FormatIpv4(*pool->Allocate()));
  EXPECT_EQ(got, (std::vector<std::string>{"10.9.0.74", "10.9.0.75", "10.9.0.76", "10.9.0.77",
                                           "10.9.0.78"}));
  auto full = pool->Allocate();
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("10.9.0.72/29"), std::string::npos);
  pool->Release(*os::ParseIpv4("10.9.0.75"));
  EXPECT_EQ(os::FormatIpv4(*pool->Allocate()), "10.9.0.75");
}

TEST(AddressPoolTest, AReleasedAddressIsTheLastToComeBack) {
  auto pool = AddressPool::Create(*os::ParseIpv4Prefix("10.9.0.0/24"));
  auto a = *pool->Allocate();
  pool->Release(a);
  EXPECT_NE(*pool->Allocate(), a);
}

TEST(AddressPoolTest, ReserveTakesAnAdoptedAddressOnceAndOnlyInsideTheRange) {
  auto pool = AddressPool::Create(*os::ParseIpv4Prefix("10.9.0.0/24"));
  EXPECT_TRUE(pool->Reserve(*os::ParseIpv4("10.9.0.2")));
  EXPECT_FALSE(pool->Reserve(*os::ParseIpv4("10.9.0.2")));
  EXPECT_FALSE(pool->Reserve(*os::ParseIpv4("10.9.0.1"))) << "the gateway";
  EXPECT_FALSE(pool->Reserve(*os::ParseIpv4("10.9.1.2")));
  EXPECT_EQ(os::FormatIpv4(*pool->Allocate()), "10.9.0.3");
  EXPECT_EQ(pool->in_use(), 2u);
}

TEST(AddressPoolTest, RangesTooSmallAreRefused) {
  EXPECT_EQ(AddressPool::Create(*os::ParseIpv4Prefix("10.0.0.0/30")).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warren::sbnet
