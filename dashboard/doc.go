// Package dashboard is hookd's web dashboard: server-rendered pages of the
// hooks, their runs and the daemon's state, drawn with html/template and
// inline SVG from embedded templates and assets (no JavaScript framework,
// no build step). A few lines of hand-written JavaScript (static/app.js)
// follow the live event stream and refresh the page's main part.
//
// The daemon serves it on its TCP listener, behind a login with the API
// token that opens a session (an HttpOnly, SameSite=Strict cookie), and on
// its unix socket, where the socket's permissions stand in for the login.
// Every request's Host and Origin are checked (DNS rebinding, cross-site
// requests), and every state-changing request needs the session's CSRF
// token. cmd/hookd wires it to the engine and the store through Source.
package dashboard
