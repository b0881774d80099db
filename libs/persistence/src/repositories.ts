import { ApiKeysRepository } from './api-keys.js';
import { CatalogRepository } from './catalog.js';
import { MembersRepository } from './members.js';
import { createPrisma, type Db } from './prisma.js';
import { UsageRepository } from './usage.js';

export interface Repositories {
  db: Db;
  members: MembersRepository;
  keys: ApiKeysRepository;
  catalog: CatalogRepository;
  usage: UsageRepository;
  close(): Promise<void>;
}

/** Every repository on one PrismaClient (a new one for the URL, or the given one). */
export function createRepositories(dbOrUrl?: Db | string): Repositories {
  const db = typeof dbOrUrl === 'object' ? dbOrUrl : createPrisma(dbOrUrl);
  return {
    db,
    members: new MembersRepository(db),
    keys: new ApiKeysRepository(db),
    catalog: new CatalogRepository(db),
    usage: new UsageRepository(db),
    close: () => db.$disconnect(),
  };
}
