// Command msched is the one binary of the msched meta-scheduler.
package main

func main() {}
