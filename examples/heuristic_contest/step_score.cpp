// The task's score of a route (mutation.improve_score; problem.md's rules, as score.py checks
// them): the value of the trees it collects, -1e18 when the judge would reject it.
double score_solve(const Input& in, const std::string& solution) {
    if ((int)solution.size() > in.budget) return -1e18;
    int n = in.n, r = in.depot_r, c = in.depot_c;
    std::vector<int> tree_at(n * n, -1);
    for (size_t i = 0; i < in.tree_v.size(); ++i) tree_at[in.tree_r[i] * n + in.tree_c[i]] = (int)i;
    std::vector<char> collected(in.tree_v.size(), 0);
    double value = 0;
    for (char move : solution) {
        if (move == 'U') --r;
        else if (move == 'D') ++r;
        else if (move == 'L') --c;
        else if (move == 'R') ++c;
        else return -1e18;
        if (r < 0 || r >= n || c < 0 || c >= n || in.grid[r][c] == '#') return -1e18;
        int tree = tree_at[r * n + c];
        if (tree >= 0 && !collected[tree]) {
            collected[tree] = 1;
            value += in.tree_v[tree];
        }
    }
    if (r != in.depot_r || c != in.depot_c) return -1e18;
    return value;
}
