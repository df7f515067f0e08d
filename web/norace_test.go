//go:build !race

package web

const raceFactor = 1
