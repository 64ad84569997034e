// 0/1 knapsack: reads "n capacity" then n lines "value weight"; prints the chosen item indices.
#include <algorithm>
#include <iostream>
#include <numeric>
#include <vector>

#include "knapsack.hpp"

// EVOLVE-BLOCK-START
// The items to take (indices into `items`); their total weight must not exceed `capacity`.
std::vector<int> choose(const std::vector<Item>& items, long long capacity) {
    std::vector<int> order(items.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return priority(items[a]) > priority(items[b]);
    });
    std::vector<int> chosen;
    long long used = 0;
    for (int index : order) {
        if (used + items[index].weight > capacity) break;
        used += items[index].weight;
        chosen.push_back(index);
    }
    return chosen;
}
// EVOLVE-BLOCK-END

int main() {
    int n = 0;
    long long capacity = 0;
    std::cin >> n >> capacity;
    std::vector<Item> items(n);
    for (auto& item : items) std::cin >> item.value >> item.weight;
    for (int index : choose(items, capacity)) std::cout << index << "\n";
    return 0;
}
