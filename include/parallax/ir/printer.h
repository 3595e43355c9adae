#pragma once
// The IR text format. print() and parse() (parser.h) round-trip:
// print(parse(print(g))) == print(g), with value ids kept as they are.
//
//   graph    ::= 'graph' gname '(' [param {',' param}] ')' '{' {node} 'return' [value {',' value}] '}'
//   gname    ::= IDENT | STRING
//   param    ::= value ':' type [STRING]                        STRING: the input's name
//   node     ::= value {',' value} '=' IDENT '(' [value {',' value}] ')' [attrs]
//                ':' type [STRING] {',' type [STRING]} ['@' STRING PHASE]
//   attrs    ::= '{' IDENT '=' attr {',' IDENT '=' attr} '}'    complete, in schema order
//   attr     ::= INT | FLOAT | 'true' | 'false' | 'none' | STRING | DTYPE | '[' [INT {',' INT}] ']'
//   type     ::= DTYPE '[' [INT {',' INT}] ']'                  f32[8,4]; f32[] is a scalar
//   value    ::= '%' DIGITS
//   DTYPE    ::= 'f32' | 'f64' | 'i64' | 'bool' | 'bf16'
//   PHASE    ::= 'forward' | 'backward' | 'optimizer'
//   FLOAT    ::= shortest round-trip decimal with '.', 'e' or both; 'nan', 'inf', '-inf'
//   STRING   ::= '"' chars with \" and \\ escaped '"'
// '#' starts a comment that runs to the end of the line. The provenance suffix
// ('@ "layers.0.mlp" backward') is printed when the node has any. Example:
//
//   graph mlp(%0: f32[8,4] "x", %1: f32[16,4] "w1") {
//     %2 = linear(%0, %1) : f32[8,16] @ "layers.0" forward
//     %3, %4 = split(%2) {sizes=[8,8], dim=1} : f32[8,8], f32[8,8]
//     return %3, %4
//   }

#include <string>

#include "parallax/ir/graph.h"

namespace px::ir {

// The whole graph, one node per line, ending in a newline.
std::string print(const Graph& graph);
// One node as it appears in the text, without indentation or newline.
std::string print_node(const Graph& graph, const Node& node);
// "%7 = add(%5, %6) {alpha=1}": what error messages use to name a node
// (the provenance follows in brackets when the node has any).
std::string node_label(const Node& node);

}  // namespace px::ir
