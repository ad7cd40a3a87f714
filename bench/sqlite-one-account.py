# The one-account statements of a chat line timed through Python's sqlite3 on the system SQLite
# (python3 bench/sqlite-one-account.py): the list forms for one value (SQLDialect.singleValueTable)
# against key lookups without RETURNING. Best of five runs of 5,000 calls, in a temporary file.
import os, shutil, sqlite3, tempfile, time
directory = tempfile.mkdtemp()
p = os.path.join(directory, 'one-account.db')
db=sqlite3.connect(p, isolation_level=None)
print(sqlite3.sqlite_version)
db.execute('pragma journal_mode=wal'); db.execute('pragma synchronous=normal')
db.execute('create table accounts(id integer primary key, app_id int not null, account text not null, badge int not null default 0, created_at int, updated_at int, unique(app_id, account))')
db.execute('create table badge_grants(message_id int not null, account_id int not null, primary key(message_id, account_id)) without rowid')
db.execute('begin')
for i in range(2000): db.execute('insert into accounts(app_id,account,badge,created_at,updated_at) values (1,?,0,0,0)', ('u%d'%i,))
db.execute('commit')
N=5000
one="(SELECT CAST(? AS BIGINT) AS value) AS value"
onet="(SELECT CAST(? AS TEXT) AS value) AS value"
def run(name, f):
    best=1e9
    for r in range(5):
        db.execute('begin')
        t=time.perf_counter()
        for i in range(N): f(r*N+i)
        el=time.perf_counter()-t
        db.execute('commit')
        best=min(best, el/N*1e6)
    print('%-44s %.2f us' % (name, best))
def grant_list(i):
    got=db.execute('INSERT INTO badge_grants (message_id, account_id) SELECT ?, value FROM %s WHERE true ON CONFLICT DO NOTHING RETURNING account_id' % one, (i, i%2000+1)).fetchall()
    db.execute('UPDATE accounts SET badge = badge + 1, updated_at = ? WHERE id IN (SELECT value FROM %s) AND +app_id = 1 RETURNING id, badge' % one, (5, i%2000+1)).fetchall()
def grant_keys(i):
    c=db.execute('INSERT INTO badge_grants (message_id, account_id) VALUES (?, ?) ON CONFLICT DO NOTHING', (1000000+i, i%2000+1)).rowcount
    if c==1: db.execute('UPDATE accounts SET badge = badge + 1, updated_at = ? WHERE id = ? AND app_id = 1', (5, i%2000+1))
    db.execute('SELECT badge FROM accounts WHERE id = ? AND app_id = 1', (i%2000+1,)).fetchall()
def incr_list(i):
    db.execute('''INSERT INTO accounts (app_id, account, badge, created_at, updated_at) SELECT 1, value, count(*), ?, ? FROM %s WHERE true GROUP BY value
      ON CONFLICT (app_id, account) DO UPDATE SET badge = accounts.badge + excluded.badge, updated_at = excluded.updated_at RETURNING account, badge''' % onet, (5,5,'u%d'%(i%2000))).fetchall()
def incr_values(i):
    db.execute('''INSERT INTO accounts (app_id, account, badge, created_at, updated_at) VALUES (1, ?, 1, ?, ?)
      ON CONFLICT (app_id, account) DO UPDATE SET badge = accounts.badge + excluded.badge, updated_at = excluded.updated_at RETURNING account, badge''', ('u%d'%(i%2000),5,5)).fetchall()
def noop(i):
    db.execute('SELECT 1').fetchall()
run('python call (SELECT 1)', noop)
run('grant: list of one (2 statements)', grant_list)
run('grant: key lookups (3 statements)', grant_keys)
run('increment: list of one', incr_list)
run('increment: one row of values', incr_values)
db.close()
shutil.rmtree(directory)
