from __future__ import annotations

from cambrian.lang.code_mask import mask_code
from cambrian.lang.definitions import find_definitions
from cambrian.lang.languages import language_by_name


def spans(source: str, language: str) -> list[tuple[str, int, int]]:
    found = find_definitions(source, language_by_name(language), top_level_only=True)
    return [(d.name, d.start, d.end) for d in found]


def test_cpp_functions_and_the_things_that_are_not() -> None:
    source = """#include <map>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
template <typename T = int>
T twice(T x) { return 2 * x; }
auto lam = [](int x) { return x; };
std::map<int, int> table = {{1, 2}};
struct Point { int x; };
struct Point make(int x) {
  return Point{x};
}
bool operator<(const Point& a, const Point& b) { return a.x < b.x; }
int Foo::bar() const { return 1; }
namespace ns { int hidden() { return 0; } }
"""
    assert spans(source, "cpp") == [("twice", 2, 4), ("make", 7, 10), ("operator<", 10, 11), ("Foo::bar", 11, 12)]


def test_cpp_masking_ignores_braces_in_literals_and_comments() -> None:
    source = 'auto s = R"x(})x"; char c = \'}\'; int n = 1\'000; // }\n/* { */ int f() { return n; }\n'
    masked = mask_code(source, language_by_name("cpp"))
    assert len(masked) == len(source) and masked.count("\n") == source.count("\n")
    assert masked.count("{") == 1 and masked.count("}") == 1
    assert "int n = 1'000;" in masked  # a digit separator is not a char literal
    assert spans(source, "cpp") == [("f", 1, 2)]


def test_javascript_and_typescript_functions() -> None:
    js = """const a = 1
function f(x) {
  return `${x}}`;
}
export const g = async (a, b) => {
  return a + b;
};
let obj = { k: 1 };
export default function h() { return '}' }
class K { m() {} }
"""
    assert spans(js, "javascript") == [("f", 1, 4), ("g", 4, 7), ("h", 8, 9)]
    ts = "export function id<T>(x: T): T {\n  return x;\n}\nconst sq = (x: number): number => {\n  return x * x;\n};\n"
    assert spans(ts, "typescript") == [("id", 0, 3), ("sq", 3, 6)]


def test_go_functions_and_methods() -> None:
    go = """package main
import "fmt"
var x = 1
func (s *S) Method(a int) int {
\treturn a
}
func Map[T any](xs []T) []T {
\treturn xs
}
type S struct { a int }
"""
    assert spans(go, "go") == [("Method", 3, 6), ("Map", 6, 9)]


def test_rust_functions_with_lifetimes_raw_strings_and_nested_comments() -> None:
    rust = """use std::io;
#[inline]
pub fn add<'a>(x: &'a str) -> &'a str {
    let c = '{';
    let s = r#"}"#;
    /* nested /* } */ */
    x
}
impl Foo {
    fn method(&self) {}
}
"""
    assert spans(rust, "rust") == [("add", 1, 8)]


def test_python_definitions_include_decorators_and_nested_ones_on_request() -> None:
    source = "import x\n\n@dec\n@dec2(1)\ndef f():\n    def inner():\n        pass\n\nclass C:\n    def m(self):\n        pass\n"
    assert spans(source, "python") == [("f", 2, 7), ("C", 8, 11)]
    everything = find_definitions(source, language_by_name("python"), top_level_only=False)
    assert [(d.name, d.depth) for d in everything] == [("f", 0), ("inner", 1), ("C", 0), ("m", 1)]
