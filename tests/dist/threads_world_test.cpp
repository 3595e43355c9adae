// White-box tests of the threads backend's rendezvous (src/dist/threads_world.h): the
// guarantees that the collectives' memory safety rests on.

#include "dist/threads_world.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "parallax/core/error.h"

namespace px::dist::threads {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<GroupState> make_group(const std::shared_ptr<World>& world, std::vector<int> ranks) {
  auto group = std::make_shared<GroupState>(world, std::move(ranks));
  world->register_group(group);
  return group;
}

// Rank 1 is still inside its phase (touching rank 0's buffers) when the job fails: rank 0's
// next rendezvous must not throw (after which rank 0 frees its buffers) before rank 1 is out.
TEST(Rendezvous, ABrokenGroupWaitsForPeersStillInTheirPhase) {
  auto world = std::make_shared<World>(3);
  auto pair = make_group(world, {0, 1});
  std::atomic<bool> rank1_done{false};
  std::atomic<bool> rank0_threw_early{false};
  auto rank0 = std::async(std::launch::async, [&] {
    pair->arrive(0, true, CollectiveKind::AllReduce);
    world->fail(2, "outsider", nullptr);  // rank 2 fails while both are in their phase
    try {
      pair->arrive(0, false, CollectiveKind::AllReduce);
    } catch (const CommError& error) {
      rank0_threw_early = !rank1_done.load();
      EXPECT_EQ(std::string(error.what()), "CommError: rank 2 failed (outsider); all_reduce on rank 0 cannot complete");
    }
  });
  auto rank1 = std::async(std::launch::async, [&] {
    pair->arrive(1, true, CollectiveKind::AllReduce);
    while (!world->failed()) std::this_thread::yield();
    std::this_thread::sleep_for(50ms);  // a long phase
    rank1_done = true;
    EXPECT_THROW(pair->arrive(1, false, CollectiveKind::AllReduce), CommError);
  });
  ASSERT_EQ(rank0.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(rank1.wait_for(30s), std::future_status::ready);
  rank0.get();
  rank1.get();
  EXPECT_FALSE(rank0_threw_early.load()) << "rank 0 left while rank 1 could still touch its buffers";
}

TEST(Rendezvous, LeavingAPhaseReleasesTheWaiters) {
  auto world = std::make_shared<World>(2);
  auto group = make_group(world, {0, 1});
  std::atomic<bool> left{false};
  auto rank0 = std::async(std::launch::async, [&] {
    group->arrive(0, true, CollectiveKind::Broadcast);
    world->fail(1, "gone", nullptr);
    EXPECT_THROW(group->arrive(0, false, CollectiveKind::Broadcast), CommError);
    EXPECT_TRUE(left.load());
  });
  group->arrive(1, true, CollectiveKind::Broadcast);
  while (!world->failed()) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  left = true;
  group->leave_phase(1);
  ASSERT_EQ(rank0.wait_for(30s), std::future_status::ready);
  rank0.get();
}

TEST(Rendezvous, AFinishedMemberBreaksOnlyItsGroups) {
  auto world = std::make_shared<World>(3);
  auto with_2 = make_group(world, {0, 2});
  auto without_2 = make_group(world, {0, 1});
  world->mark_finished(2);
  try {
    with_2->arrive(0, false, CollectiveKind::Barrier);
    ADD_FAILURE() << "a rendezvous with a finished rank completed";
  } catch (const CommError& error) {
    EXPECT_EQ(std::string(error.what()),
              "CommError: rank 2 returned from its function first (every rank of a group must call the same "
              "collectives in the same order); barrier on rank 0 cannot complete");
  }
  auto rank1 = std::async(std::launch::async, [&] { without_2->arrive(1, false, CollectiveKind::Barrier); });
  without_2->arrive(0, false, CollectiveKind::Barrier);
  ASSERT_EQ(rank1.wait_for(30s), std::future_status::ready);
  EXPECT_NO_THROW(rank1.get());
}

TEST(Rendezvous, TheFirstFailureIsKept) {
  World world(2);
  world.fail(1, "first", nullptr);
  world.fail(0, "second", nullptr);
  EXPECT_TRUE(world.failed());
  EXPECT_EQ(world.failed_rank(), 1);
  EXPECT_EQ(world.failure_message(), "first");
}

}  // namespace
}  // namespace px::dist::threads
