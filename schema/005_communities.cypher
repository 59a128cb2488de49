// Communities (kg communities build): one node per community of a level, ids derived from members.
CREATE CONSTRAINT community_id IF NOT EXISTS FOR (c:Community) REQUIRE c.id IS UNIQUE;
CREATE INDEX community_level IF NOT EXISTS FOR (c:Community) ON (c.level);
