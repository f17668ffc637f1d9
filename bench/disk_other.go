//go:build !linux

package bench

import (
	"errors"
	"math/rand/v2"
	"time"
)

var errNotLinux = errors.New("the disk section needs Linux (O_DIRECT, fadvise, memory cgroups)")

type directReader struct{}

func newDirectReader([]string, int) (*directReader, error) { return nil, errNotLinux }
func (*directReader) readRandom(*rand.Rand, int) error     { return errNotLinux }
func (*directReader) Close()                               {}

type aioReader struct{}

func newAIOReader(*directReader) (*aioReader, error) { return nil, errNotLinux }
func (*aioReader) round([]*rand.Rand, int) error     { return errNotLinux }
func (*aioReader) Close()                            {}
func (*aioReader) submitMean() time.Duration         { return 0 }
func limitMemory(int, int64) (func(), error)         { return func() {}, errNotLinux }
