/** drizzle-kit configuration for PostgreSQL: `npm run db:generate:pg` writes migrations to drizzle/pg/. */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/storage/postgres/schema.ts',
  out: './drizzle/pg',
});
