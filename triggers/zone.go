package triggers

import (
	"sync"
	"time"
)

// zones holds the time zones LoadLocation has read, by name.
var zones sync.Map // string -> *time.Location

// LoadLocation is time.LoadLocation, reading each zone's rules once a
// process: a hooks directory of thousands of hooks names the same few
// zones, and time.LoadLocation opens and parses the zone file on every
// call. A *time.Location is immutable and safe to share. A zone file
// changed on disk (a tzdata update) is read by the next process.
func LoadLocation(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}
