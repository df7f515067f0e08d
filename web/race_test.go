//go:build race

package web

// raceFactor scales wall-time bounds under the race detector, which slows
// this code about five- to tenfold.
const raceFactor = 10
