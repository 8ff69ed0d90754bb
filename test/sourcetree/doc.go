// Package sourcetree holds tests of rules over the repository itself that no compiler or linter
// enforces the same way on every machine: what goimports (run by golangci-lint) would decide
// from the module cache of the machine it runs on rather than from the tree, the licences of
// the repository, of the code of others it keeps and of the modules it ships, and what the
// shipped programs may link (no test harness, release tooling or fake).
package sourcetree
