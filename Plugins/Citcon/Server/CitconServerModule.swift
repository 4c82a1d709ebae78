// The server half of the Citcon module. It re-exports the app half, so a server imports this module
// alone and gets both.
@_exported import TillCitcon
