// Package sourcetree holds tests of rules over the repository's own Go sources that no compiler
// or linter enforces the same way on every machine: what goimports (run by golangci-lint) would
// decide from the module cache of the machine it runs on rather than from the tree.
package sourcetree
