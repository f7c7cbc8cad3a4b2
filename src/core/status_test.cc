#include "core/status.h"

#include <gtest/gtest.h>

namespace mates {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  MATES_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::NotFound("no task #3");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.WithContext("get").message(), "get: no task #3");
}

TEST(StatusTest, ExitCodesFollowTheCliContract) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("x")), 2);
  EXPECT_EQ(ExitCodeFor(Status::NotFound("x")), 1);
  EXPECT_EQ(ExitCodeFor(Status::Conflict("x")), 1);
  EXPECT_EQ(ExitCodeFor(Status::Timeout("x")), 1);
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
  EXPECT_EQ(Quarter(7).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mates
