// `TuisongStore` is where both backends are visible: the opener that picks one from a URL
// (`StoreOpener`). Whoever opens a store imports this module and sees the shared store and both
// backends through it.
@_exported import TuisongPostgresStore
@_exported import TuisongSQLStore
@_exported import TuisongSQLiteStore
