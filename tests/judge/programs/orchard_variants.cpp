// Test program: the example's greedy baseline and an insertion + 2-opt heuristic, with a
// policy choosing between them per input (always, by grid parity, or only on memorised inputs).
#include <algorithm>
#include <iostream>
#include <queue>
#include <string>
#include <vector>

struct Input {
    int n = 0, budget = 0;
    int depot_r = 0, depot_c = 0;
    std::vector<std::string> grid;
    std::vector<int> tree_r, tree_c, tree_v;
};

// EVOLVE-BLOCK-START
const int DR[4] = {-1, 1, 0, 0};
const int DC[4] = {0, 0, -1, 1};
const char MOVE[4] = {'U', 'D', 'L', 'R'};

// Shortest-path distances (in moves) from one cell to every cell; -1 when unreachable.
std::vector<int> distances_from(const Input& in, int r0, int c0) {
    int n = in.n;
    std::vector<int> dist(n * n, -1);
    std::queue<int> queue;
    dist[r0 * n + c0] = 0;
    queue.push(r0 * n + c0);
    while (!queue.empty()) {
        int cell = queue.front();
        queue.pop();
        int r = cell / n, c = cell % n;
        for (int d = 0; d < 4; ++d) {
            int nr = r + DR[d], nc = c + DC[d];
            if (nr < 0 || nr >= n || nc < 0 || nc >= n || in.grid[nr][nc] == '#') continue;
            if (dist[nr * n + nc] >= 0) continue;
            dist[nr * n + nc] = dist[cell] + 1;
            queue.push(nr * n + nc);
        }
    }
    return dist;
}

// Walks from (r, c) down the distance field `to` (distances to the target) until it arrives.
void walk(const Input& in, const std::vector<int>& to, int& r, int& c, std::string& route,
          std::vector<char>& collected, const std::vector<int>& tree_at) {
    int n = in.n;
    while (to[r * n + c] > 0) {
        for (int d = 0; d < 4; ++d) {
            int nr = r + DR[d], nc = c + DC[d];
            if (nr < 0 || nr >= n || nc < 0 || nc >= n || in.grid[nr][nc] == '#') continue;
            if (to[nr * n + nc] == to[r * n + c] - 1) {
                r = nr;
                c = nc;
                route += MOVE[d];
                int tree = tree_at[r * n + c];
                if (tree >= 0) collected[tree] = 1;
                break;
            }
        }
    }
}

std::string solve_greedy(const Input& in) {
    int n = in.n, k = (int)in.tree_v.size();
    std::vector<int> tree_at(n * n, -1);
    std::vector<std::vector<int>> dist_to_tree(k);
    for (int i = 0; i < k; ++i) {
        tree_at[in.tree_r[i] * n + in.tree_c[i]] = i;
        dist_to_tree[i] = distances_from(in, in.tree_r[i], in.tree_c[i]);
    }
    std::vector<int> dist_to_depot = distances_from(in, in.depot_r, in.depot_c);

    std::string route;
    std::vector<char> collected(k, 0);
    int r = in.depot_r, c = in.depot_c;
    while (true) {
        int remaining = in.budget - (int)route.size();
        int best = -1;
        double best_ratio = 0.0;
        for (int i = 0; i < k; ++i) {
            if (collected[i]) continue;
            int there = dist_to_tree[i][r * n + c];
            int back = dist_to_depot[in.tree_r[i] * n + in.tree_c[i]];
            if (there <= 0 || there + back > remaining) continue;
            double ratio = (double)in.tree_v[i] / there;
            if (ratio > best_ratio) {
                best_ratio = ratio;
                best = i;
            }
        }
        if (best < 0) break;
        walk(in, dist_to_tree[best], r, c, route, collected, tree_at);
    }
    walk(in, dist_to_depot, r, c, route, collected, tree_at);
    return route;
}
std::string solve_insertion(const Input& in) {
    // Greedy tour, then repeated cheapest insertion of the tree with the best value per extra
    // step, and 2-opt to shorten the tour, all while the tour fits the budget.
    int n = in.n, k = (int)in.tree_v.size();
    std::vector<int> tree_at(n * n, -1);
    std::vector<std::vector<int>> dist_to_tree(k);
    for (int i = 0; i < k; ++i) {
        tree_at[in.tree_r[i] * n + in.tree_c[i]] = i;
        dist_to_tree[i] = distances_from(in, in.tree_r[i], in.tree_c[i]);
    }
    std::vector<int> dist_to_depot = distances_from(in, in.depot_r, in.depot_c);
    // Node k is the depot.
    auto d = [&](int a, int b) {
        if (a == k && b == k) return 0;
        if (a == k) return dist_to_tree[b][in.depot_r * n + in.depot_c];
        if (b == k) return dist_to_depot[in.tree_r[a] * n + in.tree_c[a]];
        return dist_to_tree[b][in.tree_r[a] * n + in.tree_c[a]];
    };
    std::vector<int> tour = {k, k};
    std::vector<char> used(k, 0);
    auto length = [&]() {
        int total = 0;
        for (size_t i = 0; i + 1 < tour.size(); ++i) total += d(tour[i], tour[i + 1]);
        return total;
    };
    int current = 0;
    while (true) {
        int best = -1, best_pos = -1, best_extra = 0;
        double best_ratio = 0.0;
        for (int t = 0; t < k; ++t) {
            if (used[t]) continue;
            for (size_t p = 0; p + 1 < tour.size(); ++p) {
                int extra = d(tour[p], t) + d(t, tour[p + 1]) - d(tour[p], tour[p + 1]);
                if (current + extra > in.budget) continue;
                double ratio = (double)in.tree_v[t] / (extra + 1);
                if (ratio > best_ratio) {
                    best_ratio = ratio; best = t; best_pos = (int)p; best_extra = extra;
                }
            }
        }
        if (best < 0) break;
        tour.insert(tour.begin() + best_pos + 1, best);
        used[best] = 1;
        current += best_extra;
        bool improved = true;
        while (improved) {
            improved = false;
            for (size_t i = 1; i + 2 < tour.size(); ++i)
                for (size_t j = i + 1; j + 1 < tour.size(); ++j) {
                    int delta = d(tour[i - 1], tour[j]) + d(tour[i], tour[j + 1])
                              - d(tour[i - 1], tour[i]) - d(tour[j], tour[j + 1]);
                    if (delta < 0) {
                        std::reverse(tour.begin() + i, tour.begin() + j + 1);
                        improved = true;
                    }
                }
        }
        current = length();
    }
    std::string route;
    std::vector<char> collected(k, 0);
    int r = in.depot_r, c = in.depot_c;
    for (size_t i = 1; i < tour.size(); ++i) {
        const std::vector<int>& field = tour[i] == k ? dist_to_depot : dist_to_tree[tour[i]];
        walk(in, field, r, c, route, collected, tree_at);
    }
    return route;
}
// Which inputs get the insertion heuristic; the test substitutes the policy.
bool use_insertion(const Input& in) {
    /*POLICY*/
}

std::string solve(const Input& in) {
    return use_insertion(in) ? solve_insertion(in) : solve_greedy(in);
}
// EVOLVE-BLOCK-END

int main() {
    std::ios::sync_with_stdio(false);
    Input in;
    int k = 0;
    std::cin >> in.n >> in.budget >> k >> in.depot_r >> in.depot_c;
    in.grid.resize(in.n);
    for (auto& row : in.grid) std::cin >> row;
    in.tree_r.resize(k);
    in.tree_c.resize(k);
    in.tree_v.resize(k);
    for (int i = 0; i < k; ++i) std::cin >> in.tree_r[i] >> in.tree_c[i] >> in.tree_v[i];
    std::cout << solve(in) << "\n";
    return 0;
}
