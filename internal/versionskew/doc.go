// Package versionskew holds the tests of clients and masters at different versions of the
// kit's function library (lockagent/redlock.FunctionLibrary): which combinations lock, and
// that the others fail closed. testdata has the previous library, as the kit at commit
// deb76e5^ generated it (version 9b0b3ea116f1); scripts/previous-function-library.sh makes
// it again from any commit.
package versionskew
