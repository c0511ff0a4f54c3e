//go:build !linux

package main

import "errors"

var errPlacement = errors.New("placing processes on CPUs needs Linux")

type cpuSplit struct {
	mastersList, clientsList string
}

func splitCPUs() (*cpuSplit, error)   { return nil, errPlacement }
func (*cpuSplit) pinMaster(int) error { return errPlacement }
func (*cpuSplit) pinBench() error     { return errPlacement }
func ownCPUList() string              { return "" }
