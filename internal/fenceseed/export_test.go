package fenceseed

// DataKeys is dataKeys, for the tests of package fenceseed_test.
var DataKeys = dataKeys
