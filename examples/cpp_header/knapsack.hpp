// The items of a 0/1 knapsack instance and the rule that ranks them.
#pragma once

#include <vector>

struct Item {
    long long value;
    long long weight;
};

// EVOLVE-BLOCK-START
// How attractive an item is: items are considered in decreasing priority.
inline double priority(const Item& item) {
    return static_cast<double>(item.value);
}
// EVOLVE-BLOCK-END
