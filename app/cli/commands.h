// The subcommands of shardlab-cli. Each returns the process exit code.
#pragma once

#include <string>

namespace shardlab::cli {

struct CheckArgs {
  std::string project;
  bool json = false;
  int64_t batch_size = -1;
};
int run_check(const CheckArgs& a);

struct TrainArgs {
  std::string project;
  int64_t steps = -1, epochs = -1, batch_size = -1, seed = -1;
  int threads = 0;
  std::string log;  // JSONL file
  bool quiet = false;
};
int run_train(const TrainArgs& a);

}  // namespace shardlab::cli
