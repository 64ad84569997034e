// Orchard Harvest (see problem.md): a closed route from the depot collecting tree values.
// Baseline: greedy by value per step, always keeping enough budget to get back to the depot.
#include <algorithm>
#include <cmath>
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

// How attractive the tree worth `value` is when it lies `steps_there` moves away and
// `steps_back` moves from the depot; the greedy goes to the most attractive tree that fits.
double tree_priority(int value, int steps_there, int steps_back) {
    return (double)value / steps_there;
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

std::string solve(const Input& in) {
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
        double best_priority = 0.0;
        for (int i = 0; i < k; ++i) {
            if (collected[i]) continue;
            int there = dist_to_tree[i][r * n + c];
            int back = dist_to_depot[in.tree_r[i] * n + in.tree_c[i]];
            if (there <= 0 || there + back > remaining) continue;
            double priority = tree_priority(in.tree_v[i], there, back);
            if (priority > best_priority) {
                best_priority = priority;
                best = i;
            }
        }
        if (best < 0) break;
        walk(in, dist_to_tree[best], r, c, route, collected, tree_at);
    }
    walk(in, dist_to_depot, r, c, route, collected, tree_at);
    return route;
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
