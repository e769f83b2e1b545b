package engine

import "time"

// SearchQuery asks for the finished runs whose records best match Text.
type SearchQuery struct {
	Text  string    // words; a run matches all of them, or else any
	Hook  string    // only this hook's runs ("" every hook)
	Limit int       // at most this many (0: 5)
	Since time.Time // only runs finished since (zero: any time)
}

// SearchHit is one run a search found, best first.
type SearchHit struct {
	RunID  string `json:"run_id"`
	Hook   string `json:"hook"`
	Status Status `json:"status"`
	// CheckFailed is the run's Run.CheckFailed.
	CheckFailed string    `json:"check_failed,omitempty"`
	Time        time.Time `json:"time"`    // when it finished
	Snippet     string    `json:"snippet"` // the matching text, the words in [brackets]
	Score       float64   `json:"score"`   // BM25: higher is better
}
