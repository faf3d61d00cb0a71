

def test_a_store_past_the_grace_costs_two_short_transactions(account, owner_url, make_retrieval, stalled):
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    retrieval = _loopback_retrieval(make_retrieval, stalled, timeout_s=10)
    principal = _direct(account)
    create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("the first"))) if False else None

    def store() -> None:
        thread, out = _store_in_thread(db, retrieval, principal, "past the grace")
        _committed_entry(owner_url, "past the grace", thread)
        stalled.gate.set()
        thread.join(30)
        assert out and not isinstance(out[0], BaseException), out

    try:
        with db.tenant(principal.account_id) as conn:  # the scope exists (as in the fast path's count)
            conn.execute("SELECT 1")
        stalled.gate.set()
        create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("the first")))
        stalled.gate.clear()
        trips, statements = _round_trips(db, store)
    finally:
        stalled.gate.set()
        db.close()
    print("SLOW", trips, statements)
    assert sum('"COMMIT"' in s for s in statements) == 2, statements
