// Package pgurl reads a PostgreSQL connection URL (postgres:// or
// postgresql://) the way pgx, like libpq, splits it, for hookd's checks
// and messages: Describe names the database with its password masked,
// Check says why a URL does not parse without quoting any of it.
//
// Both work on the URL's structure, never on its text: the userinfo's
// password and the password and sslpassword parameters are masked
// whatever characters they hold, and a URL whose structure is ambiguous
// (an unencoded @ or / in a password moves it into the host, port or
// database name) is refused rather than shown, since a part of the
// password could stand anywhere in it.
package pgurl
