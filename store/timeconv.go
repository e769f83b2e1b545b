package store

import (
	"database/sql"
	"time"
)

// Times are stored as INTEGER unix nanoseconds; the zero time is NULL in
// nullable columns and 0 in the others. Both read back as the zero time,
// and everything else reads back in UTC.

// timeArg is t as a nullable column value.
func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// timeInt is t as a NOT NULL column value.
func timeInt(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nullTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return intTime(n.Int64)
}

func intTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}
